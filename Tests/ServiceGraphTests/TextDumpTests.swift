import ServiceGraph
import Testing

private enum Config: ServiceKey { typealias Value = String }
private enum Logger: ServiceKey { typealias Value = [String] }
private enum Store: ServiceKey { typealias Value = Int }
private enum Handler: ServiceKey { typealias Value = Int }

@Suite("Text dump")
struct TextDumpTests {
    private static let firstLine = #line + 3
    private func builder() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(Config.self) { "debug" }
        builder.provide(Logger.self, dependsOn: Config.self) { [$0] }
        builder.provide(Store.self, dependsOn: Config.self, Logger.self) { _, _ in 1 }
        builder.provide(Handler.self, lifetime: .transient, dependsOn: Store.self, Logger.self) { $0 + $1.count }
        return builder
    }

    @Test func builderDumpIsAStableTreeFromTheRoots() {
        let line = Self.firstLine
        let file = "ServiceGraphTests/TextDumpTests.swift"
        let expected = """
            ServiceGraph: 4 services (3 singleton, 0 scoped, 1 transient)
            Handler: Int [transient] @ \(file):\(line + 3)
            ├─ Store: Int [singleton] @ \(file):\(line + 2)
            │  ├─ Config: String [singleton] @ \(file):\(line)
            │  └─ Logger: Array<String> [singleton] @ \(file):\(line + 1)
            │     └─ Config (see above)
            └─ Logger (see above)

            """
        #expect(builder().dump(.text) == expected)
        #expect(builder().dump(.text) == builder().dump(.text))
    }

    @Test func builtGraphDumpAddsTheInitializationOrderAndTimings() async throws {
        let graph = try await builder().build()
        let dump = graph.dump(.text)
        #expect(dump.contains("Store: Int [singleton, #3]"))
        #expect(dump.contains("Initialization order (build took "))
        let orderLines = dump.split(separator: "\n").filter { $0.hasPrefix("  ") && $0.contains(". ") }
        #expect(orderLines.map { $0.split(separator: " ")[1] } == ["Config", "Logger", "Store"])
        #expect(orderLines.allSatisfy { $0.contains("factory ") && $0.hasSuffix(" ms") })
    }

    @Test func aBrokenGraphCanBeDumpedWithoutRunningAnything() {
        var builder = ServiceGraph.Builder()
        builder.provide(Store.self, dependsOn: Config.self, Handler.self) { _, value in value }
        builder.provide(Handler.self, dependsOn: Store.self) { $0 }
        let dump = builder.dump()
        #expect(dump.contains("Config (missing provider)"))
        #expect(dump.contains("Store (cycle)"))
    }
}
