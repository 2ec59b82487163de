#!/usr/bin/env python3
"""Plots validate + build time against graph size from the CSV the benchmark writes (--csv PATH).

Writes an SVG with no third-party dependency, so it runs on any machine with Python 3:

    swift run -c release ContainerBenchmarks --csv build-times.csv
    python3 Scripts/plot_build_times.py build-times.csv build-times.svg
"""
import csv
import math
import sys


def main(source: str, target: str) -> None:
    rows = list(csv.DictReader(open(source)))
    sizes = [int(row["services"]) for row in rows]
    series = {
        "hand-wired": [float(row["hand_wired_ns_per_service"]) * int(row["services"]) / 1e6 for row in rows],
        "ServiceGraph (validate + build)": [
            float(row["servicegraph_ns_per_service"]) * int(row["services"]) / 1e6 for row in rows
        ],
    }
    colors = {"hand-wired": "#888888", "ServiceGraph (validate + build)": "#d9480f"}

    width, height, margin = 720, 460, 70
    all_times = [t for values in series.values() for t in values]
    x_min, x_max = math.log10(min(sizes)), math.log10(max(sizes))
    y_min, y_max = math.floor(math.log10(min(all_times))), math.ceil(math.log10(max(all_times)))

    def x(size: float) -> float:
        return margin + (math.log10(size) - x_min) / (x_max - x_min) * (width - 2 * margin)

    def y(ms: float) -> float:
        return height - margin - (math.log10(ms) - y_min) / (y_max - y_min) * (height - 2 * margin)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="28" text-anchor="middle" font-size="16">Build time against graph size (log-log)</text>',
    ]
    for exponent in range(int(y_min), int(y_max) + 1):
        value = 10.0**exponent
        parts.append(f'<line x1="{margin}" x2="{width - margin}" y1="{y(value)}" y2="{y(value)}" stroke="#eeeeee"/>')
        parts.append(f'<text x="{margin - 8}" y="{y(value) + 4}" text-anchor="end">{value:g} ms</text>')
    for size in sizes:
        parts.append(f'<line x1="{x(size)}" x2="{x(size)}" y1="{margin}" y2="{height - margin}" stroke="#eeeeee"/>')
        parts.append(f'<text x="{x(size)}" y="{height - margin + 20}" text-anchor="middle">{size:,}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 20}" text-anchor="middle">services (each depending on up to three earlier ones)</text>')
    for index, (name, values) in enumerate(series.items()):
        points = " ".join(f"{x(size):.1f},{y(ms):.1f}" for size, ms in zip(sizes, values))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colors[name]}" stroke-width="2.5"/>')
        for size, ms in zip(sizes, values):
            parts.append(f'<circle cx="{x(size):.1f}" cy="{y(ms):.1f}" r="3.5" fill="{colors[name]}"/>')
        parts.append(f'<rect x="{margin + 10}" y="{margin + 8 + index * 20}" width="14" height="4" fill="{colors[name]}"/>')
        parts.append(f'<text x="{margin + 30}" y="{margin + 14 + index * 20}">{name}</text>')
    parts.append("</svg>")
    open(target, "w").write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
