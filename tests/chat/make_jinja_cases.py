#!/usr/bin/env python3
# Regenerates jinja_cases.inc: renders each case with Python Jinja2 configured as
# Hugging Face does (see tests/data/chat-golden/README.md) and prints C++ tables.
#   python3 tests/chat/make_jinja_cases.py > tests/chat/jinja_cases.inc
import json, jinja2, jinja2.sandbox, jinja2.ext
from jinja2.ext import Extension
from jinja2 import nodes
class GenerationTag(Extension):
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.Scope(body, lineno=lineno)
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
def raise_exception(m): raise jinja2.exceptions.TemplateError(m)
env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
CTX = {"s": "Hello World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": 2}, "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "tool_calls": [{"name": "f"}]}], "u": "h\u00e9llo \u4e16\u754c", "e": "", "z": None, "t": True}
cases = [
 # statements
 "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}",
 "{% if z %}a{% elif e %}b{% else %}c{% endif %}",
 "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}",
 "{% for x in l %}{{ loop.previtem is defined }}{{ loop.nextitem|default('-') }}{{ loop.cycle('a','b') }}{% endfor %}",
 "{% for x in [] %}x{% else %}empty{% endfor %}",
 "{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% endfor %}",
 "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
 "{% for k in d %}{{ k }}{% endfor %}",
 "{% for c in 'ab' %}{{ c }}.{% endfor %}",
 "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
 "{% set a, b = 1, 2 %}{{ a }}{{ b }}",
 "{% set x %}inner {{ n }}{% endset %}[{{ x }}]",
 "{% set x | upper %}shout{% endset %}{{ x }}",
 "{% set ns = namespace(c=0) %}{% for x in l %}{% set ns.c = ns.c + x %}{% endfor %}{{ ns.c }}",
 "{% set v = 1 %}{% for x in l %}{% set v = x %}{% endfor %}{{ v }}",
 "{% macro m(a, b='B') %}<{{ a }}{{ b }}>{% endmacro %}{{ m(1) }}{{ m(2, b='x') }}{{ m(a=3) }}",
 "{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}body{% endcall %}",
 "{% macro w(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(y) w(4) %}got {{ y }}{% endcall %}",
 "{% filter upper %}hello {{ s }}{% endfilter %}",
 "{% raw %}{{ not rendered }}{% endraw %}",
 "a{# comment #}b",
 "{% generation %}gen {{ n }}{% endgeneration %}",
 # whitespace
 "  {% if t %}\n  x\n  {% endif %}\n",
 "a  {%- if t -%}  b  {%- endif -%}  c",
 "a\n  {%+ if t %}b{% endif %}",
 "{{ 'x' -}}   \n  {{- 'y' }}",
 "line1\n    {# c #}\nline2",
 "{% for x in l %}\n{{ x }}\n{% endfor %}\n",
 # expressions
 "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 6 / 3 }}",
 "{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }}",
 "{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1,2] == [1,2] }} {{ 'x' in 'xyz' }} {{ 4 not in l }} {{ 'a' in d }}",
 "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1 in [True] }}",
 "{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ z or 'dflt' }} {{ 0 and 1 }}",
 "{{ 'yes' if t else 'no' }} {{ 'yes' if z else 'no' }} [{{ 'only' if z }}]",
 "{{ s[0] }} {{ s[-1] }} {{ s[1:4] }} {{ s[::-1] }} {{ s[::2] }} {{ l[1:] }} {{ l[:-1] }} {{ u[1:3] }}",
 "{{ d.a }} {{ d['b'] }} {{ msgs[1].tool_calls[0].name }} {{ msgs[0].missing is defined }}",
 "{{ none }} {{ True }} {{ false }} {{ 1.0 }} {{ 1e20 }} {{ 0.0001 }} {{ 1.5e-7 }} {{ 123456789.125 }} {{ 1/3 }}",
 "{{ [1, 'a', none, true, 2.5, [3], {'k': 'v'}] }} {{ (1,) }} {{ (1, 2) }} {{ {'q': \"it's\"} }}",
 "{{ 'tab\\there' }} {{ \"q\\\"uote\" }} {{ '\\u00e9\\x41' }} {{ 'a' 'b' }}",
 "{{ 1_000 }} {{ 0.5 }} {{ -n }} {{ +n }} {{ -f }}",
 # tests
 "{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ n is number }} {{ f is float }} {{ n is integer }} {{ t is boolean }} {{ t is true }} {{ z is false }}",
 "{{ s is string }} {{ d is mapping }} {{ l is iterable }} {{ l is sequence }} {{ s is sequence }} {{ d is sequence }} {{ z is none }} {{ q is undefined }} {{ q is defined }}",
 "{{ n is eq 7 }} {{ n is equalto 8 }} {{ 'ABC' is upper }} {{ 'abc' is lower }} {{ n is gt 3 }} {{ n is ge 7 }} {{ n is lt 3 }} {{ 1 is in l }} {{ n is not none }}",
 "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ msgs | selectattr('role', 'equalto', 'user') | list | length }} {{ msgs | rejectattr('tool_calls') | map(attribute='role') | list }}",
 "{{ msgs | selectattr('tool_calls', 'defined') | map(attribute='content') | join(',') }} {{ l | map('string') | join('-') }}",
 # filters
 "{{ d | tojson }} {{ l | tojson(indent=2) }} {{ u | tojson }} {{ u | tojson(ensure_ascii=True) }} {{ d | tojson(sort_keys=True) }} {{ {'a': [1, {'b': none}], 'c': {}} | tojson(indent=2) }}",
 "{{ 'x\\n\"y\\\\' | tojson }} {{ [] | tojson(indent=2) }} {{ 2.0 | tojson }} {{ 1e100 | tojson }} {{ true | tojson }}",
 "[{{ '  pad  ' | trim }}] [{{ 'xxhixx' | trim('x') }}] {{ l | length }} {{ s | count }} {{ u | length }} {{ d | length }}",
 "{{ q | default('D') }} {{ e | default('E') }} {{ e | default('E', true) }} {{ z | d('Z', boolean=true) }}",
 "{{ l | join(', ') }} {{ l | first }} {{ l | last }} {{ 'abc' | list }} {{ l | unique | list }} {{ ['a','A','b'] | unique | list }}",
 "{{ 'x' | string }} {{ 3 | string }} {{ '42' | int + 1 }} {{ '3.7' | int }} {{ 'z' | int(5) }} {{ '2.5' | float }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(0, 'ceil') }}",
 "{{ 'hello world' | capitalize }} {{ 'hELLO wORLD-x (y' | title }} {{ s | upper }} {{ s | lower }} {{ s | replace('o', '0') }} {{ s | replace('o', '0', 1) }}",
 "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'x\\ny' | indent('> ') }}",
 "{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }} {{ l | sort }} {{ l | sort(reverse=true) }} {{ msgs | sort(attribute='role', reverse=true) | map(attribute='role') | list }}",
 "{{ l | batch(2) | list }} {{ l | batch(2, 0) | list }} {{ l | sum }} {{ l | min }} {{ l | max }} {{ ['b', 'A', 'c'] | max }} {{ l | reverse | list }} {{ s | reverse }}",
 "{{ 'one two  three' | wordcount }} {{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | safe }} {{ '%s-%d' | format('a', 3) }} {{ 'c' | center(5) }}|",
 "{{ msgs | map(attribute='role') | list }} {{ msgs | map(attribute='nope', default='dflt') | list }} {{ [[1,2],[3]] | map('length') | list }} {{ l | map('int') | sum }}",
 # methods
 "{{ s.startswith('Hell') }} {{ s.endswith(('x', 'ld')) }} {{ s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  x  y '.split() }}",
 "[{{ '  x '.strip() }}] [{{ '  x '.lstrip() }}] [{{ '  x '.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] {{ s.replace('l', 'L') }} {{ s.upper() }} {{ s.lower() }} {{ 'ab cd'.title() }} {{ 'aBC'.capitalize() }}",
 "{{ '{} and {}'.format(1, 'two') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=5) }} {{ '{:>5}|{:<4}|'.format('r', 'l') }} {{ '{!r}'.format('q') }}",
 "{{ '-'.join(['a', 'b']) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('zz') }} {{ s.count('l') }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ u.find('\u4e16') }}",
 "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 0) }} {{ d.keys() | list }} {{ d.values() | list }} {{ l.index(2) }} {{ l.count(3) }}",
 "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b=2) }} {{ namespace(x=1).x }}",
 "{% set j = joiner(', ') %}{% for x in l %}{{ j() }}{{ x }}{% endfor %}",
 # undefined
 "[{{ q }}] [{{ q | length }}] [{{ q ~ 'x' }}] [{% for x in q %}x{% endfor %}] {{ q is none }} {{ q == q }}",
 "{{ msgs[0].content.strip() }} {{ 'abc'[5] is defined }} {{ d.zz is defined }}",
]
error_cases = [
 "{{ q.attr }}",
 "{{ q + 1 }}",
 "{{ d.zz.yy }}",
 "{{ raise_exception('custom failure') }}",
 "{{ l.append(4) }}",
 "{{ 'a' + 1 }}",
 "{{ 1 / 0 }}",
 "{{ none.x.y }}",
 "{{ l | tojson | safe }}{{ l | map('string') | tojson }}",
 "line1\n{% if %}",
 "line1\nline2 {{ 1 +* }}",
 "{% for x in l %}",
 "{% endif %}",
 "{% foo %}",
 "{{ 'unterminated }}",
 "{{ l | nosuchfilter }}",
 "{{ d.__class__.__name__ }}",
 "{{ 1 < 'a' }}",
 "{{ 'x'.split('') }}",
]
def cq(s):
    out = '"'
    for b in s.encode('utf-8'):
        c = chr(b)
        if c == '"': out += '\\"'
        elif c == '\\': out += '\\\\'
        elif c == '\n': out += '\\n'
        elif c == '\t': out += '\\t'
        elif c == '\r': out += '\\r'
        elif 32 <= b < 127: out += c
        else: out += '\\x%02x""' % b
    return out + '"'
print("// Generated once from Python Jinja2 %s (HF settings); see the comment at the top." % jinja2.__version__)
print("const RenderCase kRenderCases[] = {")
for c in cases:
    try:
        r = env.from_string(c).render(**CTX)
    except Exception as ex:
        raise SystemExit("case failed: %r: %r" % (c, ex))
    print("    {%s,\n     %s}," % (cq(c), cq(r)))
print("};")
print("const ErrorCase kErrorCases[] = {")
for c in error_cases:
    try:
        env.from_string(c).render(**CTX)
        raise SystemExit("no error: " + c)
    except SystemExit: raise
    except Exception as ex:
        kind = type(ex).__name__
        msg = str(ex).split("\n")[0] if kind not in ("TemplateSyntaxError","TemplateAssertionError") else ""
        print("    {%s, %s, %s, %d}," % (cq(c), cq(kind), cq(msg), getattr(ex, 'lineno', 0) or 0))
print("};")
print("const char* const kContextJson = %s;" % cq(json.dumps(CTX)))
