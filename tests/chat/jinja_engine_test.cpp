// Unit tests of the Jinja engine: every statement, expression form, filter,
// test and method against expectations rendered by Python's Jinja2 (the
// tables in jinja_cases.inc, produced by make_jinja_cases.py), plus errors
// with line numbers and the limits that keep hostile templates bounded.

#include <gtest/gtest.h>

#include "cria/chat/chat_template.h"
#include "cria/chat/jinja.h"

namespace {

using cria::jinja::Limits;
using cria::jinja::Template;
using cria::jinja::TemplateError;
using cria::jinja::Value;

struct RenderCase {
    const char* source;
    const char* expected;
};
struct ErrorCase {
    const char* source;
    const char* kind;
    const char* message;  // empty: not compared (syntax errors are worded differently)
    int line;             // 0: not compared
};
#include "jinja_cases.inc"

Value context() {
    Value ctx = Value::from_json(nlohmann::ordered_json::parse(kContextJson));
    ctx.as_dict().set(Value("raise_exception"), Value::callable("raise_exception", [](cria::jinja::Args& a) -> Value {
                          throw TemplateError("TemplateError", a.get(0, "message").str());
                      }));
    return ctx;
}

std::string render(const std::string& src, Limits limits = {}) { return Template(src, limits).render(context()); }

TEST(JinjaEngine, RendersLikeJinja2) {
    for (const RenderCase& c : kRenderCases) {
        SCOPED_TRACE(c.source);
        try {
            EXPECT_EQ(render(c.source), c.expected);
        } catch (const cria::Error& e) {
            ADD_FAILURE() << "threw " << e.what();
        }
    }
}

TEST(JinjaEngine, FailsLikeJinja2) {
    for (const ErrorCase& c : kErrorCases) {
        SCOPED_TRACE(c.source);
        try {
            const std::string out = render(c.source);
            ADD_FAILURE() << "rendered '" << out << "'";
        } catch (const TemplateError& e) {
            EXPECT_EQ(e.kind(), c.kind) << e.what();
            if (*c.message) {
                EXPECT_EQ(e.message(), c.message);
            }
            if (c.line) {
                EXPECT_EQ(e.line(), c.line) << e.what();
            }
        }
    }
}

TEST(JinjaEngine, RuntimeErrorsCarryTheTemplateLine) {
    try {
        render("a\nb\n{{ 1 }}\n{{ q.x }}\n");
        FAIL();
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.line(), 4);
        EXPECT_NE(std::string(e.what()).find("line 4"), std::string::npos);
    }
}

TEST(JinjaEngine, SyntaxErrorsCarryLineAndColumn) {
    try {
        render("ok\n  {{ 1 + }}");
        FAIL();
    } catch (const TemplateError& e) {
        EXPECT_EQ(e.kind(), "TemplateSyntaxError");
        EXPECT_EQ(e.line(), 2);
        EXPECT_EQ(e.column(), 10);  // the "}}" where an operand was expected
        EXPECT_NE(std::string(e.what()).find("line 2, column 10"), std::string::npos) << e.what();
    }
}

TEST(JinjaEngine, TrailingNewlineIsDroppedOnce) {
    EXPECT_EQ(render("x\n"), "x");
    EXPECT_EQ(render("x\n\n"), "x\n");
}

TEST(JinjaEngine, NoTrimAfterVariableTags) {
    EXPECT_EQ(render("{{ 1 }}\n{{ 2 }}"), "1\n2");
    EXPECT_EQ(render("{% if t %}\nA{% endif %}"), "A");
}

TEST(JinjaEngine, LimitsStopRunawayLoops) {
    Limits limits;
    limits.max_steps = 10000;
    EXPECT_THROW(render("{% for i in range(100000) %}{% endfor %}", limits), TemplateError);
    EXPECT_THROW(render("{% for i in range(200) %}{% for j in range(200) %}{% endfor %}{% endfor %}", limits), TemplateError);
}

TEST(JinjaEngine, LimitsStopHugeOutput) {
    Limits limits;
    limits.max_output_bytes = 1000;
    limits.max_collection_size = 1000;
    EXPECT_THROW(render("{% for i in range(900) %}xx{% endfor %}", limits), TemplateError);
    EXPECT_THROW(render("{{ 'x' * 5000 }}", limits), TemplateError);
    EXPECT_THROW(render("{{ range(5000) | list | length }}", limits), TemplateError);
}

TEST(JinjaEngine, LimitsStopDeepNestingAndRecursion) {
    std::string deep;
    for (int i = 0; i < 2000; ++i) deep += "(";
    EXPECT_THROW(render("{{ " + deep + " }}"), TemplateError);
    std::string nested;
    for (int i = 0; i < 2000; ++i) nested += "{% if t %}";
    EXPECT_THROW(render(nested), TemplateError);
    EXPECT_THROW(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), TemplateError);
}

TEST(JinjaEngine, IntegerOverflowIsAnErrorNotUB) {
    EXPECT_THROW(render("{{ 9223372036854775807 + 1 }}"), TemplateError);
    EXPECT_THROW(render("{{ 2 ** 64 }}"), TemplateError);
    EXPECT_THROW(render("{{ -9223372036854775807 - 2 }}"), TemplateError);
}

TEST(JinjaValue, PythonFloatRepr) {
    EXPECT_EQ(cria::jinja::python_float_repr(0.1), "0.1");
    EXPECT_EQ(cria::jinja::python_float_repr(1e16), "1e+16");
    EXPECT_EQ(cria::jinja::python_float_repr(1234567890123456.0), "1234567890123456.0");
    EXPECT_EQ(cria::jinja::python_float_repr(0.0001), "0.0001");
    EXPECT_EQ(cria::jinja::python_float_repr(0.00001), "1e-05");
    EXPECT_EQ(cria::jinja::python_float_repr(-2.5), "-2.5");
}

TEST(ChatTemplate, PassesExtraContextAndTools) {
    cria::chat::ChatTemplateInputs in;
    in.messages = nlohmann::ordered_json::parse(R"([{"role":"user","content":"hi"}])");
    in.extra_context = nlohmann::ordered_json::parse(R"({"enable_thinking": false})");
    in.bos_token = "<s>";
    const std::string src =
        "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}"
        "{% if enable_thinking is defined and not enable_thinking %}/no_think{% endif %}{{ tools is defined }}";
    EXPECT_EQ(cria::chat::render_chat_template(src, in), "<s>user:hi/no_thinkFalse");
    in.tools = nlohmann::ordered_json::parse(R"([{"name":"f"}])");
    EXPECT_EQ(cria::chat::render_chat_template("{{ tools | tojson }}", in), "[{\"name\": \"f\"}]");
}

TEST(ChatTemplate, StrftimeNowUsesTheGivenTime) {
    cria::chat::ChatTemplateInputs in;
    in.now = 1768473000;  // 2026-01-15 10:30 UTC
    EXPECT_EQ(cria::chat::render_chat_template("{{ strftime_now('%d %b %Y %H:%M') }}", in), "15 Jan 2026 10:30");
}

TEST(ChatTemplate, RaiseExceptionCarriesTheMessage) {
    cria::chat::ChatTemplateInputs in;
    try {
        cria::chat::render_chat_template("{{ raise_exception('no system role') }}", in);
        FAIL();
    } catch (const cria::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no system role"), std::string::npos);
    }
}

}  // namespace

namespace {

// Fuzzing found that a macro stored in the scope it closes over, or a
// namespace holding itself, leaked (shared_ptr cycles). The ASan build's
// leak checker fails this test if they come back.
TEST(JinjaEngine, ReferenceCyclesAreFreed) {
    EXPECT_EQ(render("{% set ns = namespace(x=[]) %}{% set ns.me = ns %}{% macro m() %}M{% endmacro %}"
                     "{% for i in range(3) %}{% macro inner() %}{{ m() }}{% endmacro %}{{ inner() }}{% endfor %}"),
              "MMM");
}

// Fuzz regressions: inputs that once misbehaved must fail cleanly.
TEST(JinjaEngine, HostileInputsFailCleanly) {
    const char* const inputs[] = {
        "{{ 'a' * 9223372036854775807 }}",
        "{{ range(9223372036854775807) | length }}",
        "{{ [1] * 9223372036854775807 }}",
        "{{ 'x'.center(9223372036854775807) }}",
        "{{ 'x' | indent(99999999) }}",
        "{% for i in range(-9223372036854775807, 9223372036854775807, 4611686018427387904) %}{{ i }}{% endfor %}",
        "{{ (1).__class__ }}{{ ''[9223372036854775807] }}{{ ''[-9223372036854775807:] }}",
        "{% raw %}unterminated",
        "{# unterminated",
        "{{ {'a': 1}['a'] ~ {}[[]] }}",
        "{% set a, b = 'xyz' %}",
        "{{ '%s %s' % (1,) }}{{ '{0' .format(1) }}",
    };
    for (const char* src : inputs) {
        SCOPED_TRACE(src);
        try {
            render(src);
        } catch (const cria::Error&) {
        }
    }
}

}  // namespace

namespace {

// `levels` arrays around a number (parsed from text: building it by
// wrapping would copy the whole value at every level).
nlohmann::ordered_json nested_arrays(int levels) {
    return nlohmann::ordered_json::parse(std::string(levels, '[') + "1" + std::string(levels, ']'));
}

TEST(JinjaValue, FromJsonTakesJsonUpToTheDepthLimitAndRefusesDeeper) {
    // A request can carry JSON thousands of levels deep; the conversion
    // recurses per level, so it stops at the limit with an error naming it.
    EXPECT_NO_THROW(Value::from_json(nested_arrays(Value::kMaxJsonDepth - 1)));  // + the number: kMaxJsonDepth levels
    try {
        Value::from_json(nested_arrays(Value::kMaxJsonDepth));
        ADD_FAILURE() << "JSON deeper than the limit was converted";
    } catch (const cria::Error& e) {
        EXPECT_NE(std::string(e.what()).find(std::to_string(Value::kMaxJsonDepth)), std::string::npos) << e.what();
    }
    EXPECT_THROW(Value::from_json(nested_arrays(12000)), cria::Error);
}

}  // namespace
