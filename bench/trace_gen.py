#!/usr/bin/env python3
"""A synthetic request trace in the Azure LLM inference trace's format, for timing `kvplan trace`.

    usage: bench/trace_gen.py ROWS OUT.csv [OUT.jsonl] [--seed N] [--rate R]

CSV: the header TIMESTAMP,ContextTokens,GeneratedTokens and rows such as
"2023-11-16 18:15:46.6805900,374,44", as the Azure trace writes them. JSON Lines (optional): the
same requests as {"TIMESTAMP": "...", "ContextTokens": 374, "GeneratedTokens": 44}.

The requests are shaped like the Azure conversation trace 2023 (whose log-length moments these
are; CC-BY 4.0, Patel et al., "Splitwise", ISCA 2024), not copied from it:
  - arrivals: a Poisson process at R requests/s (default 20, about 1.7 million a day) from
    2023-11-16 18:15:46.6805900, times in ticks of 100 ns as the trace writes them;
  - prompt tokens: round(lognormal(mu 6.633, sigma 0.985)) clipped to [2, 14050];
  - generated tokens: round(lognormal(mu 5.019, sigma 0.859)) clipped to [7, 1000].
The same seed (default 20231116) and row count give the same bytes: Python's `random` draws are
reproducible across 3.x versions for a given seed.
"""

import argparse
import datetime
import random


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("rows", type=int)
    ap.add_argument("csv")
    ap.add_argument("jsonl", nargs="?")
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("--rate", type=float, default=20.0, help="requests per second")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    start = datetime.datetime(2023, 11, 16, 18, 15, 46, 680590)
    tick = 6  # the first arrival's ticks of 100 ns past `start`'s microsecond: ...46.6805906
    day_ticks = 86400 * 10_000_000
    # Seconds-of-day arithmetic in integer ticks; the date is recomputed only when the day changes.
    base_day = start.date()
    t = ((start.hour * 3600 + start.minute * 60 + start.second) * 1_000_000 + start.microsecond) * 10
    t += tick
    day = 0
    day_text = base_day.isoformat()
    lognorm = rng.lognormvariate
    expo = rng.expovariate
    csv_out = open(a.csv, "w", newline="")
    json_out = open(a.jsonl, "w", newline="") if a.jsonl else None
    csv_out.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    csv_rows, json_rows = [], []
    for i in range(a.rows):
        prompt = min(max(round(lognorm(6.633, 0.985)), 2), 14050)
        output = min(max(round(lognorm(5.019, 0.859)), 7), 1000)
        d, in_day = divmod(t, day_ticks)
        if d != day:
            day = d
            day_text = (base_day + datetime.timedelta(days=d)).isoformat()
        sec, frac = divmod(in_day, 10_000_000)
        hh, rem = divmod(sec, 3600)
        mm, ss = divmod(rem, 60)
        stamp = f"{day_text} {hh:02d}:{mm:02d}:{ss:02d}.{frac:07d}"
        csv_rows.append(f"{stamp},{prompt},{output}\n")
        if json_out:
            json_rows.append(
                f'{{"TIMESTAMP": "{stamp}", "ContextTokens": {prompt}, "GeneratedTokens": {output}}}\n'
            )
        if len(csv_rows) == 65536:
            csv_out.write("".join(csv_rows))
            csv_rows.clear()
            if json_out:
                json_out.write("".join(json_rows))
                json_rows.clear()
        t += max(1, round(expo(a.rate) * 10_000_000))
    csv_out.write("".join(csv_rows))
    csv_out.close()
    if json_out:
        json_out.write("".join(json_rows))
        json_out.close()


if __name__ == "__main__":
    main()
