#!/usr/bin/env python3
"""Writes a graph of services of distinct types, as an application declares them: one class per
service with its own initializer taking its dependencies, one key per service, wired as a random DAG.

    python3 Scripts/generate_distinct_graph.py
        writes Sources/ContainerBenchmarks/DistinctGraph.swift (1,000 services; every contender)
    python3 Scripts/generate_distinct_graph.py --count 100 --parts servicegraph --main --output FILE
        writes a stand-alone program (used by Scripts/code_size.sh)

The DAG is seeded and deterministic: service i depends on k distinct earlier services, k drawn
uniformly from 0...4 (2 on average, fewer for the first few), each drawn uniformly from 0..<i, with
SplitMix64 seeded with 42. `ScaleShape.randomDAG` in ScaleGraph.swift draws the same graph at run
time, so the 1,000-service scale row and this file wire the same edges. Run it after changing either.
"""
import argparse
import os
import subprocess

MASK = (1 << 64) - 1
SEED = 42
MAX_DEPENDENCIES = 4


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def random_dag(count):
    generator = SplitMix64(SEED)
    result = []
    for index in range(count):
        wanted = min(generator.next() % (MAX_DEPENDENCIES + 1), index)
        chosen = []
        while len(chosen) < wanted:
            candidate = generator.next() % index
            if candidate not in chosen:
                chosen.append(candidate)
        result.append(chosen)
    return result


def service(i):
    return f"DistinctService{i}"


def key(i):
    return f"DistinctKey{i}"


def types(graph):
    lines = []
    for i, deps in enumerate(graph):
        if not deps:
            lines += [f"final class {service(i)}: Sendable {{}}", ""]
            continue
        lines.append(f"final class {service(i)}: Sendable {{")
        for slot, d in enumerate(deps):
            lines.append(f"    let dependency{slot}: {service(d)}")
        params = ", ".join(f"_ dependency{slot}: {service(d)}" for slot, d in enumerate(deps))
        lines.append("")
        lines.append(f"    init({params}) {{")
        for slot in range(len(deps)):
            lines.append(f"        self.dependency{slot} = dependency{slot}")
        lines.append("    }")
        lines.append("}")
        lines.append("")
    for i in range(len(graph)):
        lines.append(f"enum {key(i)}: ServiceKey {{ typealias Value = {service(i)} }}")
    lines.append("")
    return lines


def servicegraph(graph):
    lines = [
        "enum DistinctServiceGraph {",
        "    /// Declares every service.",
        "    static func builder() -> ServiceGraph.Builder {",
        "        var builder = ServiceGraph.Builder()",
    ]
    for i, deps in enumerate(graph):
        if not deps:
            lines.append(f"        builder.provide({key(i)}.self) {{ {service(i)}() }}")
        else:
            keys = ", ".join(f"{key(d)}.self" for d in deps)
            params = ", ".join(f"${slot}" for slot in range(len(deps)))
            lines.append(f"        builder.provide({key(i)}.self, dependsOn: {keys}) {{")
            lines.append(f"            {service(i)}({params})")
            lines.append("        }")
    lines += ["        return builder", "    }", "", "    /// Reads every service once.",
              "    static func readEach(_ graph: ServiceGraph) {"]
    for i in range(len(graph)):
        lines.append(f"        blackHole(graph[{key(i)}.self])")
    lines += ["    }", "}", ""]
    return lines


def handwired(graph):
    lines = [
        "/// The same graph wired by hand: each initializer called with its dependencies, every instance",
        "/// kept until the end (as the graph keeps its singletons until shutdown). The instances are kept in",
        "/// an array: a class with one stored property per service would be the usual spelling, but with",
        "/// 1,000 properties its initializer takes the compiler many minutes.",
        "enum DistinctHandWired {",
        "    /// Makes every service, reads each once, and returns what must be kept.",
        "    static func build() -> [AnyObject] {",
        f"        var kept: [AnyObject] = []",
        f"        kept.reserveCapacity({len(graph)})",
    ]
    for i, deps in enumerate(graph):
        args = ", ".join(f"service{d}" for d in deps)
        lines.append(f"        let service{i} = {service(i)}({args})")
        lines.append(f"        kept.append(service{i})")
    for i in range(len(graph)):
        lines.append(f"        blackHole(service{i})")
    lines += ["        return kept", "    }", "}", ""]
    return lines


def locator(graph):
    lines = [
        "extension NaiveLocator {",
        "    /// Registers every service of the distinct-type graph as an instance made from what it",
        "    /// resolves from the locator (no validation: a missing one would trap at run time).",
        "    static func distinctGraph() -> NaiveLocator {",
        "        let locator = NaiveLocator()",
    ]
    for i, deps in enumerate(graph):
        args = ", ".join("locator.resolve()" for _ in deps)
        lines.append(f"        locator.register({service(i)}.self, instance: {service(i)}({args}))")
    lines += ["        return locator", "    }", "", "    /// Reads every service once.",
              "    func readEachDistinct() {"]
    for i in range(len(graph)):
        lines.append(f"        blackHole(resolve({service(i)}.self))")
    lines += ["    }", "}", ""]
    return lines


def swinject(graph):
    lines = [
        "extension SwinjectContender {",
        "    /// Registers every service of the distinct-type graph in `.container` scope.",
        "    static func distinctGraph() -> Container {",
        "        let container = Container()",
    ]
    for i, deps in enumerate(graph):
        if not deps:
            lines.append(f"        container.register({service(i)}.self) {{ _ in {service(i)}() }}"
                         ".inObjectScope(.container)")
        else:
            args = ", ".join(f"r.resolve({service(d)}.self)!" for d in deps)
            lines.append(f"        container.register({service(i)}.self) {{ r in")
            lines.append(f"            {service(i)}({args})")
            lines.append("        }.inObjectScope(.container)")
    lines += ["        return container", "    }", "",
              "    /// Resolves every service once (the first resolve of each creates it).",
              "    static func readEachDistinct(_ container: Container) {"]
    for i in range(len(graph)):
        lines.append(f"        blackHole(container.resolve({service(i)}.self)!)")
    lines += ["    }", "}", ""]
    return lines


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--parts", default="servicegraph,handwired,locator,swinject")
    parser.add_argument("--main", action="store_true", help="write a stand-alone program")
    parser.add_argument("--no-format", action="store_true", help="skip swift format")
    parser.add_argument(
        "--output", default=os.path.join(here, "..", "Sources", "ContainerBenchmarks", "DistinctGraph.swift")
    )
    options = parser.parse_args()
    parts = options.parts.split(",")
    graph = random_dag(options.count)

    lines = [f"// Generated by Scripts/generate_distinct_graph.py ({options.count} services): do not edit."]
    lines.append("import ServiceGraph")
    if "swinject" in parts:
        lines.append("import Swinject")
    lines.append("")
    lines += [f"// {sum(len(d) for d in graph)} dependencies in all.", ""]
    if options.main:
        lines += [
            "@inline(never)",
            "@_optimize(none)",
            "func blackHole<T>(_ value: consuming T) {}",
            "",
        ]
    lines += types(graph)
    generators = {"servicegraph": servicegraph, "handwired": handwired, "locator": locator, "swinject": swinject}
    for part in parts:
        if part in generators:
            lines += generators[part](graph)
    if options.main:
        # The program's one build, timed inside the process and printed: the first build an application
        # pays (the runtime's one-time work per type included), without the process's start and exit.
        lines += ["let start = ContinuousClock.now"]
        if "servicegraph" in parts:
            lines += [
                "let builder = DistinctServiceGraph.builder()",
                "try builder.validate()",
                "let graph = try await builder.build()",
                "DistinctServiceGraph.readEach(graph)",
                "try await graph.shutdown()",
            ]
        elif "locator" in parts:
            # NaiveLocator.swift is copied beside this file (see Scripts/code_size.py).
            lines += [
                "let locator = NaiveLocator.distinctGraph()",
                "locator.readEachDistinct()",
                "blackHole(locator)",
            ]
        else:
            lines += ["blackHole(DistinctHandWired.build())"]
        lines += [
            "let elapsed = start.duration(to: .now).components",
            'print("first build: \\(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000) ns")',
            "",
        ]

    with open(options.output, "w") as file:
        file.write("\n".join(lines))
    # The benchmarks' sources are kept `swift format lint --strict` clean.
    if not options.no_format:
        subprocess.run(["swift", "format", "format", "-i", options.output], check=False)


main()
