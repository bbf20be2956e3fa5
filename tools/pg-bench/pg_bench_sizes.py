"""Sizes as pg-bench reads and prints them, for the Python scripts around it.

parse_size reads what pg-bench's -b and -e take: a decimal number of bytes,
then optionally K, M or G (binary multiples, either case), then optionally B
or b, or iB or ib after a unit. "8", "8B", "4K", "4kb", "4KiB", "256M", "1G".
Anything else, spaces included, is refused with a ValueError.

human_bytes prints a size as pg-bench's own output does: the exact number in
the largest binary unit that divides it, up to TiB. 4096 -> "4 KiB", 3000 ->
"3000 B", 64 << 20 -> "64 MiB". Without its space, parse_size reads such a
name back, up to GiB (neither reads a T).

Both follow pg-bench's parse_size and human_bytes (tools/pg-bench/options.cpp);
tests/bench/test_sizes.py checks them against pg-bench itself. Standard
library only. Installed next to pg-bench-plot and pg-bench-ratios, which
import it from their own folder.
"""
import argparse

_SHIFTS = {"K": 10, "M": 20, "G": 30}
_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"]
SIZE_MAX = (1 << 64) - 1  # pg-bench's size_t
EXAMPLES = "8, 4K, 256M, 1G"


def parse_size(text):
    """Bytes from "8", "4K", "4KiB", "256M", "1G"; ValueError for anything else."""
    if not isinstance(text, str):
        raise ValueError(f"bad size {text!r}: expected text such as {EXAMPLES}")
    # ASCII digits only, as pg-bench (str.isdigit would also take other scripts' digits)
    digits = len(text) - len(text.lstrip("0123456789"))
    number, unit = text[:digits], text[digits:]
    refused = not number
    if unit[-1:] in ("B", "b"):
        unit = unit[:-1]
        if unit.endswith("i"):
            unit = unit[:-1]
            refused = refused or not unit  # "4iB"
    shift = 0
    if unit:
        shift = _SHIFTS.get(unit.upper()) if len(unit) == 1 else None
        refused = refused or shift is None
    if refused:
        raise ValueError(f"bad size '{text}': expected a size such as {EXAMPLES}")
    value = int(number)
    if value > SIZE_MAX >> shift:
        raise ValueError(f"bad size '{text}': larger than {SIZE_MAX} bytes")
    return value << shift


def human_bytes(nbytes):
    """pg-bench's name for a size: 4096 -> "4 KiB", 3000 -> "3000 B"."""
    value = int(nbytes)
    if value != nbytes or value < 0:
        raise ValueError(f"not a size in bytes: {nbytes!r}")
    unit = 0
    while unit < len(_UNITS) - 1 and value >= 1024 and value % 1024 == 0:
        value //= 1024
        unit += 1
    return f"{value} {_UNITS[unit]}"


def size_arg(text):
    """parse_size for argparse's type=: a refused size is a usage error."""
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
