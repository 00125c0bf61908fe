// Chat templates: the Hugging Face globals (raise_exception, strftime_now)
// and the variables transformers passes to the template.

#include "cria/chat/chat_template.h"

#include <ctime>

namespace cria::chat {

namespace {

jinja::Value make_context(const ChatTemplateInputs& in) {
    using jinja::Value;
    Value ctx = Value::dict();
    auto& d = ctx.as_dict();
    d.set(Value("messages"), Value::from_json(in.messages));
    if (!in.tools.is_null()) d.set(Value("tools"), Value::from_json(in.tools));
    d.set(Value("add_generation_prompt"), Value(in.add_generation_prompt));
    d.set(Value("bos_token"), Value(in.bos_token));
    d.set(Value("eos_token"), Value(in.eos_token));
    if (in.extra_context.is_object())
        for (const auto& [k, v] : in.extra_context.items()) d.set(Value(k), Value::from_json(v));

    d.set(Value("raise_exception"), Value::callable("raise_exception", [](jinja::Args& a) -> Value {
              throw jinja::TemplateError("TemplateError", a.get(0, "message").str());
          }));
    const long long now = in.now;
    d.set(Value("strftime_now"), Value::callable("strftime_now", [now](jinja::Args& a) -> Value {
              const std::string fmt = a.get(0, "format").str();
              const std::time_t t = now >= 0 ? static_cast<std::time_t>(now) : std::time(nullptr);
              std::tm tm{};
              if (now >= 0) gmtime_r(&t, &tm);
              else localtime_r(&t, &tm);
              if (fmt.empty()) return Value("");
              std::string buf(fmt.size() * 8 + 64, '\0');
              const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
              buf.resize(n);
              return Value(buf);
          }));
    return ctx;
}

}  // namespace

std::string render_chat_template(const jinja::Template& tmpl, const ChatTemplateInputs& inputs) {
    return tmpl.render(make_context(inputs));
}

std::string render_chat_template(const std::string& template_source, const ChatTemplateInputs& inputs,
                                 const jinja::Limits& limits) {
    const jinja::Template tmpl(template_source, limits);
    return render_chat_template(tmpl, inputs);
}

}  // namespace cria::chat
