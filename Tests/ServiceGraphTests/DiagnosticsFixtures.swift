import ServiceGraph

// A small graph shared by the diagnostics tests: Config ← Logger ← Store ← Handler, Store ← Config.

enum DiagConfig: ServiceKey { typealias Value = String }
enum DiagLogger: ServiceKey { typealias Value = [String] }
enum DiagStore: ServiceKey { typealias Value = Int }
enum DiagHandler: ServiceKey { typealias Value = Int }
enum DiagMissing: ServiceKey { typealias Value = Int }

enum DiagnosticsFixtures {
    static func builder() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(DiagConfig.self) { "debug \"quoted\"" }
        builder.provide(DiagLogger.self, dependsOn: DiagConfig.self) { [$0] }
        builder.provide(DiagStore.self, dependsOn: DiagConfig.self, DiagLogger.self) { _, _ in
            await Task.yield()
            return 1
        }
        builder.provide(DiagHandler.self, lifetime: .transient, dependsOn: DiagStore.self, DiagLogger.self) {
            $0 + $1.count
        }
        return builder
    }

    /// The same graph with a missing key under the store and a cycle between two extra services.
    static func brokenBuilder() -> ServiceGraph.Builder {
        var builder = builder()
        builder.override(DiagStore.self, dependsOn: DiagConfig.self, DiagMissing.self) { _, value in value }
        return builder
    }
}
