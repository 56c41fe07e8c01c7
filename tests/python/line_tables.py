"""Dumps real line tables with what the running interpreter says they mean, as JSON on stdout,
for tests/integration/test_python_layout.py to decode with py_line_at and compare offset by
offset. Runs under every CPython from 3.8 on (no newer syntax here).

For every code object of a corpus (functions written below and ones generated with huge line
gaps, back-jumps over hundreds of lines, >255-byte lines and thousands of lines), recursively
through nested code: the raw table (co_lnotab before 3.10, co_linetable after), co_firstlineno,
and for byte offset -1 and every even byte offset of the bytecode:
  addr2line  CPython's PyCode_Addr2Line (what tracebacks and f_lineno use), -1 -> null
  lines      co_lines() (3.10+) or dis.findlinestarts (3.8, 3.9), None -> null
"""
import ctypes
import dis
import json
import sys

VERSION = "%d.%d" % sys.version_info[:2]

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int


def plain(x):
    return x + 1


def loops(n):
    total = 0
    for i in range(n):
        while total < i:
            total += 1
        if total % 3:
            continue
    return total


def multiline_call(a, b):
    return max(
        a,
        b,
        plain(
            a
        ),
    )


def handlers(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return str(e)
    finally:
        plain(1)


def gen(n):
    for i in range(n):
        yield i * 2
    return [x for x in range(n) if x]


async def coro(x):
    await x
    async with x as y:
        return y


class Klass:
    def method(self, *a, **k):
        return lambda: (self, a, k)


def _generated():
    """Source with the shapes a compact table has to split: line gaps and line runs of every
    size around the encodings' limits (127, 255, 63 for varints), back-references over many
    lines, long lines of bytecode, and a large function."""
    parts = []
    gap = "\n" * 300
    parts.append("def gap_forward(x):\n    a = x\n" + gap + "    b = a + 1\n" + "\n" * 70000 + "    return b\n")
    # The call is attributed back to its first line: a negative delta over >255 lines.
    parts.append("def gap_backward(x):\n    return plain(\n" + gap + "        x" + gap + "    )\n")
    parts.append("def gaps(x):\n" + "".join("    x += %d\n%s" % (n, "\n" * n) for n in
                                               (1, 62, 63, 64, 126, 127, 128, 129, 254, 255, 256, 257, 4095, 4096))
                 + "    return x\n")
    # One line whose bytecode is far longer than 255 bytes (and than 8 code units).
    parts.append("def long_line(a):\n    x = [" + ", ".join("a + %d" % i for i in range(400)) + "]\n    return x\n")
    # A jump over a long body and a loop back over it.
    body = "".join("            a = a * %d + %d\n" % (i, i) for i in range(300))
    parts.append("def long_jump(a, n):\n    while n:\n        n -= 1\n        if a > 5:\n" + body
                 + "        a = 0\n    return a\n")
    big = "".join("    v%d = a + %d\n    if v%d > %d:\n        a = v%d\n" % (i, i, i, i * 7, i) for i in range(1500))
    parts.append("def large(a):\n" + big + "    return a\n")
    # Columns past 127 and 255 (the 3.11+ short forms give way to the long form).
    parts.append("def wide(a):\n    return " + " " * 300 + "a + plain(a) + " + " " * 200 + "plain(a)\n")
    src = "\n".join(parts)
    ns = {"plain": plain}
    exec(compile(src, "<generated>", "exec"), ns)
    return [ns[n] for n in ("gap_forward", "gap_backward", "gaps", "long_line", "long_jump", "large", "wide")]


def code_objects(co, out):
    out.append(co)
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            code_objects(c, out)


def main():
    roots = [plain, loops, multiline_call, handlers, gen, coro, Klass.method] + _generated()
    codes = []
    for f in roots:
        code_objects(f.__code__, codes)
    functions = []
    for i, co in enumerate(codes):
        table = co.co_lnotab if sys.version_info < (3, 10) else co.co_linetable
        n = len(co.co_code)
        offsets = [-1] + list(range(0, n, 2))
        a2l = []
        for off in offsets:
            line = addr2line(co, off)
            a2l.append(None if line < 0 else line)
        if hasattr(co, "co_lines"):
            by_offset = {}
            for start, end, line in co.co_lines():
                for off in range(start, end):
                    by_offset[off] = line
        else:
            by_offset = {}
            starts = list(dis.findlinestarts(co))
            for k, (start, line) in enumerate(starts):
                end = starts[k + 1][0] if k + 1 < len(starts) else n
                for off in range(start, end):
                    by_offset[off] = line
        functions.append({
            "name": "%d:%s:%d" % (i, getattr(co, "co_qualname", co.co_name), co.co_firstlineno),
            "table": table.hex(),
            "firstlineno": co.co_firstlineno,
            "code_len": n,
            "offsets": offsets,
            "addr2line": a2l,
            "lines": [by_offset.get(off, "absent") if off >= 0 else co.co_firstlineno for off in offsets],
        })
    json.dump({"version": VERSION, "functions": functions}, sys.stdout)


if __name__ == "__main__":
    main()
