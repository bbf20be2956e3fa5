#!/usr/bin/env python3
"""check_binding_header.py HEADER: the table the Fortran module's communication calls are
generated from (bindings/fortran/procedures.py) against the C header (include/pg_strategy.h).

Every communication call of the header (a prototype taking `pg_strategy *` first, in the
groups `collectives` and `nonblocking`, or taking a pg_dtype) must be in the table, as a
call or the nonblocking twin of one, and every call of the table in the header, with the
same argument names, in the same order, of the kinds the table gives. Prints what differs
and exits 1; prints how many calls it compared and exits 0 when nothing does.
"""
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "fortran"))
from gen_binding import calls, prototypes  # noqa: E402

# The C type of each kind of argument in the table.
C_TYPES = {"in": "const void*", "out": "void*", "inout": "void*", "count": "size_t", "dtype": "pg_dtype",
           "op": "pg_op", "int": "int", "sendcounts": "const size_t*", "sdispls": "const size_t*",
           "recvcounts": "const size_t*", "rdispls": "const size_t*"}


def header_calls(path):
    """{name: [(type, name)]} of the header's communication calls."""
    with open(path, encoding="utf-8") as f:
        chunks = re.split(r"@defgroup\s+", f.read())  # each starts with its group's name
    found = {}
    for chunk in chunks:
        group = chunk.split(None, 1)[0] if chunk.strip() else ""
        for name, (_, params) in prototypes(chunk, "PG_API").items():
            args = [(t, n) for t, n, _ in params]
            if args and args[0][0] == "pg_strategy*" and (
                    group in ("collectives", "nonblocking") or any(t == "pg_dtype" for t, _ in args)):
                found[name] = args
    return found


def main(path):
    header, problems, compared = header_calls(path), [], 0
    show = lambda args: ", ".join(f"{t} {n}" for t, n in args)  # noqa: E731
    for call in calls():
        table = [("pg_strategy*", "s")] + [(C_TYPES[k], n) for n, k in call["args"]]
        expected = {f"pg_{call['name']}": table}
        if call.get("nonblocking", True):
            expected[f"pg_i{call['name']}"] = table + [("pg_work**", "work")]
        elif f"pg_i{call['name']}" in header:
            problems.append(f"pg_i{call['name']} is in the header, but procedures.py says nonblocking=False")
        for name, args in expected.items():
            got = header.pop(name, None)
            if got is None:
                problems.append(f"{name}: in procedures.py, not in {path}")
            elif got != args:
                problems.append(f"{name}: the header has ({show(got)}),\n  procedures.py gives ({show(args)})")
            compared += 1
    problems += [f"{name}({show(args)}): in {path}, not in procedures.py" for name, args in header.items()]
    for p in problems:
        print(f"check_binding_header: {p}")
    if not problems:
        print(f"check_binding_header: the {compared} calls of procedures.py match {path}")
    return 1 if problems or not compared else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else __doc__)
