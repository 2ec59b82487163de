#!/usr/bin/env python3
"""Machine code per registration: builds release executables that declare, validate, build and read
a graph of 100 and of 1,000 services of distinct types (Scripts/generate_distinct_graph.py), with
ServiceGraph and hand-wired, and reports their text segments from `size`.

    python3 Scripts/code_size.py [--scratch PATH] [--counts 100,1000] [--runs N]

Each executable declares, validates, builds, reads and shuts down its graph once, in a fresh
process: with `--runs N` the script also runs each N times, interleaved, with a third program, the
dictionary locator of the in-process rows doing the same, and reports the median wall time of the
whole process and of the build timed inside it: the first build an application pays, which includes
the runtime's one-time work per service type (instantiating metadata, a type's first conformance
check) that in-process benchmarks repeat past.

Both executables of a size hold the same service classes and key types and link the same library,
so the difference between them is the code the registrations make. Builds in its own scratch folder
(Benchmarks/.build-codesize by default), one `swift build` for all the executables.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCHMARKS)


def sizes(path):
    """The Berkeley `text` figure (code and read-only data) and the `.text` section (code only)."""
    berkeley = subprocess.run(["size", path], check=True, capture_output=True, text=True).stdout.splitlines()
    text = int(berkeley[1].split()[0])
    sections = subprocess.run(["size", "-A", path], check=True, capture_output=True, text=True).stdout
    code = sum(int(line.split()[1]) for line in sections.splitlines() if line.split()[:1] == [".text"])
    return text, code


def largest_stack_frame(path):
    """The largest stack frame a function of the executable reserves (x86-64: `sub $N,%rsp` in its
    prologue), and the function's symbol; None where objdump or the pattern is not there. A composition
    root of many registrations is one function: its frame must not grow with them (it did, by 108 B
    each, until `provide` stopped passing its factory by address)."""
    try:
        listing = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", path], check=True, capture_output=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    largest, function, current = None, None, None
    for line in listing.splitlines():
        match = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if match:
            current = match.group(1)
            continue
        match = re.search(r"\bsub\s+\$0x([0-9a-f]+),%rsp", line)
        if match and (largest is None or int(match.group(1), 16) > largest):
            largest, function = int(match.group(1), 16), current
    return None if largest is None else (largest, function)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch", default=os.path.join(BENCHMARKS, ".build-codesize"))
    parser.add_argument("--counts", default="100,1000")
    parser.add_argument("--runs", type=int, default=0)
    options = parser.parse_args()
    counts = [int(c) for c in options.counts.split(",")]
    package = os.path.join(options.scratch, "package")
    contenders = {"ServiceGraph": "servicegraph", "HandWired": "handwired"}
    # Timed only: the dictionary locator of the in-process rows, doing the same first build.
    timed_only = {"Locator": "locator"} if options.runs > 0 else {}

    targets = []
    for count in counts:
        for name, part in {**contenders, **timed_only}.items():
            target = f"{name}{count}"
            targets.append(target)
            folder = os.path.join(package, "Sources", target)
            os.makedirs(folder, exist_ok=True)
            subprocess.run(
                [
                    sys.executable,
                    os.path.join(HERE, "generate_distinct_graph.py"),
                    "--count",
                    str(count),
                    "--parts",
                    part,
                    "--main",
                    "--no-format",
                    "--output",
                    os.path.join(folder, "main.swift"),
                ],
                check=True,
            )
            if part == "locator":
                shutil.copy(os.path.join(BENCHMARKS, "Sources", "ContainerBenchmarks", "NaiveLocator.swift"), folder)
    manifest = [
        "// swift-tools-version: 6.2",
        "import PackageDescription",
        "",
        "let package = Package(",
        '    name: "CodeSize",',
        f'    dependencies: [.package(name: "ServiceGraph", path: "{ROOT}")],',
        "    targets: [",
    ]
    for target in targets:
        manifest.append(
            f'        .executableTarget(name: "{target}", '
            f'dependencies: [.product(name: "ServiceGraph", package: "ServiceGraph")]),'
        )
    manifest += ["    ],", "    swiftLanguageModes: [.v6]", ")", ""]
    with open(os.path.join(package, "Package.swift"), "w") as file:
        file.write("\n".join(manifest))

    subprocess.run(
        [
            "swift",
            "build",
            "-c",
            "release",
            "--package-path",
            package,
            "--scratch-path",
            os.path.join(options.scratch, "build"),
        ],
        check=True,
    )
    binaries = subprocess.run(
        [
            "swift",
            "build",
            "-c",
            "release",
            "--package-path",
            package,
            "--scratch-path",
            os.path.join(options.scratch, "build"),
            "--show-bin-path",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()

    figures = {target: sizes(os.path.join(binaries, target)) for target in targets if not target.startswith("Locator")}
    print("\n| registrations | executable | text (size) | .text (machine code) |")
    print("|---:|---|---:|---:|")
    for count in counts:
        for name in contenders:
            text, code = figures[f"{name}{count}"]
            print(f"| {count} | {name} | {text:,} B | {code:,} B |")

    print("\n| | text per registration | .text per registration |")
    print("|---|---:|---:|")
    for count in counts:
        ours, theirs = figures[f"ServiceGraph{count}"], figures[f"HandWired{count}"]
        print(
            f"| ServiceGraph − hand-wired, {count} registrations "
            f"| {(ours[0] - theirs[0]) / count:,.0f} B | {(ours[1] - theirs[1]) / count:,.0f} B |"
        )
    if len(counts) >= 2:
        low, high = min(counts), max(counts)
        for name in contenders:
            a, b = figures[f"{name}{low}"], figures[f"{name}{high}"]
            print(
                f"| {name}, each registration from {low} to {high} "
                f"| {(b[0] - a[0]) / (high - low):,.0f} B | {(b[1] - a[1]) / (high - low):,.0f} B |"
            )

    print("\n| registrations | executable | largest stack frame of a function | the function |")
    print("|---:|---|---:|---|")
    for count in counts:
        for name in contenders:
            frame = largest_stack_frame(os.path.join(binaries, f"{name}{count}"))
            size, function = frame if frame else (None, None)
            shown = f"{size:,} B" if size is not None else "n/a"
            print(f"| {count} | {name} | {shown} | {(function or '')[:70]} |")

    if options.runs > 0:
        first_build_times(binaries, targets, counts, [*contenders, *timed_only], options.runs)


def first_build_times(binaries, targets, counts, contenders, runs):
    """Each executable run `runs` times, in turn: the median of the whole process's wall time, and of
    its one build timed inside it (``first build: N ns``, printed by the program)."""
    wall = {target: [] for target in targets}
    build = {target: [] for target in targets}
    for _ in range(runs):
        for target in targets:
            start = time.perf_counter()
            output = subprocess.run([os.path.join(binaries, target)], check=True, capture_output=True, text=True)
            wall[target].append(time.perf_counter() - start)
            line = next(l for l in output.stdout.splitlines() if l.startswith("first build: "))
            build[target].append(int(line.split()[2]))
    print(
        f"\n| registrations | executable | whole process, median of {runs} | × hand-wired "
        "| first build in the process | per service | × hand-wired | × locator |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for count in counts:
        wall_baseline = statistics.median(wall[f"HandWired{count}"])
        build_baseline = statistics.median(build[f"HandWired{count}"])
        locator = statistics.median(build[f"Locator{count}"]) if f"Locator{count}" in build else None
        for name in contenders:
            median = statistics.median(wall[f"{name}{count}"])
            first = statistics.median(build[f"{name}{count}"])
            against_locator = f"{first / locator:.2f}x" if locator else ""
            print(
                f"| {count} | {name} | {median * 1000:.2f} ms | {median / wall_baseline:.2f}x "
                f"| {first / 1e6:.3f} ms | {first / count:,.0f} ns | {first / build_baseline:.2f}x | {against_locator} |"
            )

main()
