import ServiceGraph

/// Validate + build + read each + shutdown of 1,000 services of 1,000 distinct types (the shape of a
/// real app), against hand-wired code, a dictionary locator and Swinject doing the same, interleaved.
@MainActor
func distinctTypeRows(_ effort: Effort) async throws {
    print("Scenario: build 1,000 services of 1,000 distinct types (a random DAG, 2 dependencies on average)")
    let size = 1_000
    let distinct = try await measureInterleaved(
        effort,
        [
            { n in
                for _ in 0..<n { blackHole(DistinctHandWired.build()) }
            },
            { n in
                for _ in 0..<n {
                    let locator = NaiveLocator.distinctGraph()
                    locator.readEachDistinct()
                    blackHole(locator)
                }
            },
            { n in
                for _ in 0..<n {
                    let container = SwinjectContender.distinctGraph()
                    SwinjectContender.readEachDistinct(container)
                    blackHole(container)
                }
            },
            { n in
                for _ in 0..<n {
                    let builder = DistinctServiceGraph.builder()
                    try builder.validate()
                    let graph = try await builder.build()
                    DistinctServiceGraph.readEach(graph)
                    try await graph.shutdown()
                }
            },
        ]
    )
    let scenario = "build 1000 distinct types"
    record(
        scenario,
        "hand-wired",
        distinct[0] / Double(size),
        unit: "ns/service",
        note: "initializers; instances kept, read each"
    )
    record(
        scenario,
        "naive locator",
        distinct[1] / Double(size),
        unit: "ns/service",
        note: "register instances + read each"
    )
    record(scenario, "Swinject", distinct[2] / Double(size), unit: "ns/service", note: "register + resolve each")
    record(
        scenario,
        "ServiceGraph",
        distinct[3] / Double(size),
        unit: "ns/service",
        note: "declare + validate + build + read each + shutdown"
    )
}
