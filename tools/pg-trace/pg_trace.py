#!/usr/bin/env python3
"""pg-trace: what each rank of a pgstrategy job did last, from the flight
recorder's dumps (PGS_TRACE=DIR; docs/trace.md).

    pg-trace DIR                        the report: the answer on the first line
    pg-trace --perfetto OUT.json DIR    the timeline as Chrome trace events (Perfetto, chrome://tracing)
    pg-trace --plot OUT.png DIR         the timeline as a picture (needs matplotlib)

Reads the dumps of any set of ranks (pgstrategy-<job>-rank<R>.json); the
strategies' sizes say which ranks are missing. Per strategy it finds the first
collective on which ranks disagree (operation, type, count, operator, root),
the ranks that never arrived at a collective others entered, the ranks that
entered one and never finished it, and the stragglers: which ranks arrive
last, how often and how late. Exit status: 0 when a report was made, 2 when
the dumps cannot be read.
"""

import argparse
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

FORMAT = "pgstrategy-trace"
# What a collective's arguments must agree on across ranks.
SIGNATURE = ("op", "dtype", "redop", "count", "root", "nonblocking")
# A rank counts as a straggler when it is last at more than half of the
# collectives, and its lateness is above this (clock alignment is much better).
STRAGGLER_MIN_NS = 1_000_000


class DumpError(Exception):
    """A dump that cannot be used: the message says which and why."""


def fail(message):
    print(f"pg-trace: {message}", file=sys.stderr)
    sys.exit(2)


def load(folder, job=None):
    """The dumps of one job in `folder`: {world rank: dump}, and the job's name."""
    if not os.path.isdir(folder):
        raise DumpError(f"{folder}: not a folder")
    paths = sorted(glob.glob(os.path.join(folder, "pgstrategy-*-rank*.json")))
    if not paths:
        raise DumpError(f"{folder}: no dumps (pgstrategy-<job>-rank<R>.json); was PGS_TRACE set to this folder?")
    dumps = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except json.JSONDecodeError as e:
            raise DumpError(f"{path}: not a complete dump (JSON error at line {e.lineno}: {e.msg})") from None
        except (OSError, UnicodeDecodeError) as e:
            raise DumpError(f"{path}: cannot be read ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise DumpError(f"{path}: not a pgstrategy flight-recorder dump (no \"format\": \"{FORMAT}\")")
        if data.get("version") != 1:
            raise DumpError(f"{path}: dump version {data.get('version')!r}; this pg-trace reads version 1")
        try:
            data["_path"] = path
            data["_mtime"] = os.path.getmtime(path)
            dumps.setdefault(str(data["job"]), {})[int(data["rank"])] = data
            for s in data["strategies"]:
                s["id"], s["rank"], s["size"], s["world_ranks"], s["entries"]  # noqa: B018 (required fields)
        except (KeyError, TypeError, ValueError) as e:
            raise DumpError(f"{path}: a required field is missing or malformed ({e})") from None
    if job is None:  # the job written last
        job = max(dumps, key=lambda j: max(d["_mtime"] for d in dumps[j].values()))
    elif job not in dumps:
        raise DumpError(f"{folder}: no dumps of job {job!r}; jobs here: {', '.join(sorted(dumps))}")
    return dumps[job], job


def strategies_of(dumps):
    """{strategy id: {"size", "world_ranks", "backend", "ranks": {strategy rank: strategy record}}}."""
    out = {}
    for dump in dumps.values():
        for s in dump["strategies"]:
            st = out.setdefault(s["id"], {"size": s["size"], "world_ranks": s["world_ranks"],
                                          "backend": s.get("backend", "?"), "ranks": {}})
            st["ranks"][s["rank"]] = s
    return out


def collectives(record):
    """{coll_seq: entry} of one rank's strategy record."""
    return {e["coll_seq"]: e for e in record["entries"] if "coll_seq" in e}


def signature(entry):
    return tuple(entry.get(k) for k in SIGNATURE)


def describe(entry):
    text = f"{entry['op']} #{entry['coll_seq']}"
    args = [f"{k}={entry[k]}" for k in ("dtype", "redop", "count", "root") if k in entry]
    if entry.get("nonblocking"):
        args.append("nonblocking")
    return text + (" (" + ", ".join(args) + ")" if args else "")


def ranks_text(ranks):
    ranks = sorted(ranks)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def analyse(sid, st):
    """Findings for one strategy: (kind, one-line answer, detail lines). Kinds, by how
    much they explain: mismatch, hang, straggler, ok."""
    size, ranks = st["size"], st["ranks"]
    world = st["world_ranks"]
    name = f"strategy {sid} ({st['backend']}, {size} rank{'s' if size != 1 else ''})"
    details = []
    no_dump = [r for r in range(size) if r not in ranks]
    if no_dump:
        details.append(f"no dump from {ranks_text(no_dump)} (world {ranks_text(world[r] for r in no_dump)})")
    per_rank = {r: collectives(rec) for r, rec in ranks.items()}
    clocks = {r: rec.get("clock_uncertainty_ns", 0) for r, rec in ranks.items()}
    if clocks:
        details.append(f"clocks aligned to rank 0's within {max(clocks.values()) / 1000:.1f} us")

    # The collectives every dumped rank still holds (older ones left the ring buffers).
    lows = [min(c) for c in per_rank.values() if c]
    low = max(lows) if lows else 1
    everything = sorted({seq for c in per_rank.values() for seq in c if seq >= low})

    # 1. The first collective on which ranks disagree.
    for seq in everything:
        here = {r: c[seq] for r, c in per_rank.items() if seq in c}
        if len({signature(e) for e in here.values()}) > 1:
            groups = defaultdict(list)
            for r, e in here.items():
                groups[describe(e)].append(r)
            lines = [f"  {ranks_text(rs)}: {d}" for d, rs in sorted(groups.items(), key=lambda kv: min(kv[1]))]
            return ("mismatch", f"MISMATCH in {name}: ranks disagree on collective #{seq}: " +
                    "; ".join(f"{ranks_text(rs)} {d.split(' ')[0]}" for d, rs in
                              sorted(groups.items(), key=lambda kv: min(kv[1]))),
                    details + [f"collective #{seq}:"] + lines)

    # 2. A collective some ranks entered and the others never did, or never finished.
    if everything:
        last = everything[-1]
        entered = {r for r, c in per_rank.items() if last in c}
        unfinished = {r for r, c in per_rank.items() if last in c and c[last].get("status") is None}
        never = sorted(set(range(size)) - entered)
        op = describe(next(per_rank[r][last] for r in entered))
        if never or unfinished:
            parts = []
            if never:
                parts.append(f"{ranks_text(never)} never arrived" +
                             (" (no dump)" if set(never) <= set(no_dump) else ""))
            if unfinished:
                parts.append(f"{ranks_text(unfinished)} entered it and did not finish")
            behind = {r: max(per_rank[r]) for r in never if r in per_rank and per_rank[r]}
            for r, seq in sorted(behind.items()):
                details.append(f"rank {r}'s last collective: {describe(per_rank[r][seq])}")
            return ("hang", f"HANG in {name}: {op}: " + "; ".join(parts), details)

    # 3. Stragglers: who arrives last, how often and how late.
    last_counts, lateness = defaultdict(int), defaultdict(list)
    complete = [seq for seq in everything if all(seq in per_rank.get(r, {}) for r in range(size))]
    if size > 1 and complete:
        for seq in complete:
            starts = {r: per_rank[r][seq]["start_ns"] for r in range(size)}
            latest = max(starts, key=starts.get)
            others = [t for r, t in starts.items() if r != latest]
            last_counts[latest] += 1
            lateness[latest].append(starts[latest] - statistics.median(others))
        spreads = [max(per_rank[r][seq]["start_ns"] for r in range(size)) -
                   min(per_rank[r][seq]["start_ns"] for r in range(size)) for seq in complete]
        details.append(f"{len(complete)} collectives seen by every rank; arrival spread median "
                       f"{statistics.median(spreads) / 1e6:.3f} ms, max {max(spreads) / 1e6:.3f} ms")
        for r in sorted(last_counts, key=lambda r: -last_counts[r]):
            late = lateness[r]
            details.append(f"  rank {r} (world {world[r]}) last at {last_counts[r]} of {len(complete)}: "
                           f"{statistics.mean(late) / 1e6:.3f} ms late on average, max {max(late) / 1e6:.3f} ms")
        worst = max(last_counts, key=lambda r: last_counts[r])
        mean = statistics.mean(lateness[worst])
        if last_counts[worst] * 2 > len(complete) and mean > STRAGGLER_MIN_NS:
            return ("straggler", f"STRAGGLER in {name}: rank {worst} (world {world[worst]}) arrives last at "
                                 f"{last_counts[worst]} of {len(complete)} collectives, {mean / 1e6:.1f} ms late on "
                                 f"average (max {max(lateness[worst]) / 1e6:.1f} ms)", details)
    return ("ok", f"ok: {name}: every rank finished every recorded collective", details)


def report(dumps, job, out=sys.stdout):
    strategies = strategies_of(dumps)
    order = {"mismatch": 0, "hang": 1, "straggler": 2, "ok": 3}
    findings = sorted((analyse(sid, st) + (sid,) for sid, st in strategies.items()), key=lambda f: order[f[0]])
    if not findings:
        print("nothing recorded: the dumps hold no strategy", file=out)
        return
    print(findings[0][1], file=out)
    reasons = sorted({d.get("reason", "?") for d in dumps.values()})
    world = max(d.get("world_size", 0) for d in dumps.values())
    print(f"job {job}: dumps from {len(dumps)} of {world} ranks ({', '.join(reasons)}), "
          f"{len(strategies)} strateg{'y' if len(strategies) == 1 else 'ies'}", file=out)
    for kind, answer, details, sid in findings:
        if (kind, answer) != findings[0][:2]:
            print(answer, file=out)
        for line in details:
            print(f"  {line}", file=out)


def events(dumps):
    """The entries of every rank as (world rank, strategy id, entry, end or None), times aligned."""
    for rank, dump in dumps.items():
        for s in dump["strategies"]:
            for e in s["entries"]:
                yield rank, s["id"], e


def perfetto(dumps, path):
    starts = [e["start_ns"] for _, _, e in events(dumps)]
    if not starts:
        raise DumpError("nothing recorded: no operation to draw")
    t0 = min(starts)
    last = max(max(e.get("end_ns", e["start_ns"]) for _, _, e in events(dumps)), t0)
    trace = []
    tids = {}
    for rank, dump in dumps.items():
        trace.append({"ph": "M", "name": "process_name", "pid": rank,
                      "args": {"name": f"rank {rank} ({dump.get('host', '?')})"}})
        trace.append({"ph": "M", "name": "process_sort_index", "pid": rank, "args": {"sort_index": rank}})
    for rank, sid, e in events(dumps):
        tid = tids.setdefault(sid, len(tids))
        end = e.get("end_ns", last)
        args = {k: v for k, v in e.items() if k not in ("start_ns", "end_ns")}
        args["strategy"] = sid
        if "end_ns" not in e:
            args["state"] = "in flight when the dump was written"
        name = e["op"] + (f" #{e['coll_seq']}" if "coll_seq" in e else "")
        trace.append({"ph": "X", "name": name, "cat": e["op"], "pid": rank, "tid": tid,
                      "ts": (e["start_ns"] - t0) / 1000.0, "dur": max(end - e["start_ns"], 0) / 1000.0, "args": args})
    for rank in dumps:
        for sid, tid in tids.items():
            trace.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": sid}})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
    return len(trace)


def plot(dumps, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise DumpError("--plot needs matplotlib (pip install matplotlib, or Debian's python3-matplotlib); "
                        "--perfetto needs nothing") from None
    items = list(events(dumps))
    if not items:
        raise DumpError("nothing recorded: no operation to draw")
    t0 = min(e["start_ns"] for _, _, e in items)
    last = max(e.get("end_ns", e["start_ns"]) for _, _, e in items)
    ops = sorted({e["op"] for _, _, e in items})
    colors = {op: plt.get_cmap("tab10")(i % 10) for i, op in enumerate(ops)}
    ranks = sorted(dumps)
    fig, ax = plt.subplots(figsize=(12, 1 + 0.5 * len(ranks)))
    for rank, _, e in items:
        start = (e["start_ns"] - t0) / 1e6
        width = max((e.get("end_ns", last) - e["start_ns"]) / 1e6, 1e-3)
        ax.broken_barh([(start, width)], (ranks.index(rank) - 0.4, 0.8), facecolors=colors[e["op"]],
                       edgecolor="black" if "end_ns" not in e else "white", linewidth=0.8)
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.set_xlabel("ms (rank 0's clock)")
    ax.invert_yaxis()
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colors[o]) for o in ops], labels=ops,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_title("pgstrategy flight recorder (outlined: in flight at the dump)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="pg-trace", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", help="the folder PGS_TRACE named")
    parser.add_argument("--job", help="the job to read, when the folder holds several (default: the newest)")
    parser.add_argument("--perfetto", metavar="OUT.json", help="write the timeline as Chrome trace events")
    parser.add_argument("--plot", metavar="OUT.png", help="draw the timeline (matplotlib)")
    args = parser.parse_args(argv)
    try:
        dumps, job = load(args.dir, args.job)
        if args.perfetto:
            n = perfetto(dumps, args.perfetto)
            print(f"pg-trace: {n} trace events written to {args.perfetto}")
        if args.plot:
            plot(dumps, args.plot)
            print(f"pg-trace: timeline drawn in {args.plot}")
        if not args.perfetto and not args.plot:
            report(dumps, job)
    except DumpError as e:
        fail(str(e))
    except OSError as e:
        fail(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
