import Foundation
import ServiceGraph
import Testing

private protocol Tracking: Sendable { func track(_ event: String) -> String }
private typealias Analytics = any Tracking
private struct ConsoleAnalytics: Tracking { func track(_ event: String) -> String { "tracked \(event)" } }

private enum AnalyticsKey: ServiceKey { typealias Value = Analytics }
private enum MetricsKey: ServiceKey { typealias Value = Int }
private enum CheckoutKey: ServiceKey { typealias Value = String }
private enum ReportKey: ServiceKey { typealias Value = String }
private enum SessionKey: ServiceKey { typealias Value = Int }
private enum WideKey: ServiceKey { typealias Value = Wide }

private struct Wide: Sendable, Equatable {
    var a: Int64
    var b: Int64
    var c: Int64
    var d: Int64
}

@Suite("Optional dependencies")
struct OptionalDependencyTests {
    /// A checkout service that uses analytics only where the application provides it.
    private func checkout(into builder: inout ServiceGraph.Builder, lifetime: Lifetime = .singleton) {
        builder.provide(CheckoutKey.self, lifetime: lifetime, dependsOn: AnalyticsKey?.self, MetricsKey.self) {
            analytics,
            metrics in
            "\(analytics?.track("checkout") ?? "untracked") with \(metrics)"
        }
    }

    @Test func anOptionalDependencyIsTheValueWhereProvidedAndNilWhereNot() async throws {
        var without = ServiceGraph.Builder()
        without.provide(MetricsKey.self) { 7 }
        checkout(into: &without)
        var with = without
        with.provide(AnalyticsKey.self) { ConsoleAnalytics() }

        let bare = try await without.build()
        #expect(bare[CheckoutKey.self] == "untracked with 7")
        let tracked = try await with.build()
        #expect(tracked[CheckoutKey.self] == "tracked checkout with 7")
        try await bare.shutdown()
        try await tracked.shutdown()
    }

    @Test func everyPathReadsOptionalDependenciesInDeclarationOrder() async throws {
        // Present and absent optional dependencies between direct ones, on the synchronous and
        // asynchronous paths, of transients, scoped services and singletons.
        for provided in [false, true] {
            var builder = ServiceGraph.Builder()
            builder.provide(MetricsKey.self) { 3 }
            if provided { builder.provide(WideKey.self) { Wide(a: 1, b: 2, c: 3, d: 4) } }
            builder.provide(SessionKey.self, lifetime: .scoped) { 10 }
            builder.provide(
                ReportKey.self,
                lifetime: .transient,
                dependsOn: WideKey?.self,
                MetricsKey.self,
                AnalyticsKey?.self,
                SessionKey.self
            ) { wide, metrics, analytics, session in
                "\(wide.map { "\($0.a + $0.d)" } ?? "-") \(metrics) \(analytics == nil) \(session)"
            }
            builder.provide(
                CheckoutKey.self,
                lifetime: .transient,
                dependsOn: MetricsKey.self,
                WideKey?.self,
                SessionKey.self,
                AnalyticsKey?.self,
                MetricsKey.self
            ) { (first: Int, wide: Wide?, session: Int, analytics: Analytics?, last: Int) async throws -> String in
                await Task.yield()
                return "\(first) \(wide?.d ?? -1) \(session) \(analytics == nil) \(last)"
            }
            let graph = try await builder.build()
            let scope = try graph.makeScope()
            let expectedWide = provided ? "5" : "-"
            #expect(try await scope.resolve(ReportKey.self) == "\(expectedWide) 3 true 10")
            #expect(try await scope.resolve(CheckoutKey.self) == "3 \(provided ? 4 : -1) 10 true 3")
            try await scope.close()
            try await graph.shutdown()
        }
    }

    @Test func anOptionalEdgeToAProvidedKeyIsValidatedLikeAnyOther() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SessionKey.self, lifetime: .scoped) { 1 }
        builder.provide(MetricsKey.self, dependsOn: SessionKey?.self) { $0 ?? 0 }  // captive through an optional edge
        builder.provide(ReportKey.self, dependsOn: CheckoutKey?.self) { $0 ?? "" }  // a cycle through optional edges
        builder.provide(CheckoutKey.self, dependsOn: ReportKey?.self) { $0 ?? "" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle, .captiveDependency])
        #expect(error.problems[0].path == ["ReportKey", "CheckoutKey", "ReportKey"])
        #expect(error.problems[1].key == "MetricsKey")
        #expect(error.problems[1].path.last == "SessionKey")
    }

    @Test func anAbsentOptionalDependencyIsNoProblemButLintListsIt() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MetricsKey.self) { 1 }
        checkout(into: &builder)
        builder.declareEntryPoints(CheckoutKey.self)
        try builder.validate()
        let warnings = builder.lint()
        #expect(warnings.map(\.code) == [.absentOptionalDependency])
        #expect(warnings[0].key == "CheckoutKey")
        #expect(
            warnings[0].message
                == "CheckoutKey depends on AnalyticsKey? but nothing provides AnalyticsKey: its factory gets nil"
        )
        #expect(warnings[0].site.fileID.hasSuffix("OptionalDependencyTests.swift"))
    }

    @Test func aMissingDirectDependencyIsStillReportedBesideAnAbsentOptionalOne() throws {
        var builder = ServiceGraph.Builder()
        checkout(into: &builder)  // MetricsKey, a direct dependency, is missing; AnalyticsKey? is absent
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "MetricsKey")
        #expect(error.problems[0].path == ["CheckoutKey", "MetricsKey"])
        // The broken graph's dump names the missing key, and the absent one apart.
        let dump = try #require(error.dump(.text))
        #expect(dump.contains("MetricsKey (missing provider)"))
        #expect(dump.contains("AnalyticsKey? (optional, not provided)"))
    }

    @Test func providingAnOptionalWrapperIsRefused() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(AnalyticsKey?.self) { nil }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey])
        #expect(
            error.problems[0].message
                == "AnalyticsKey? is an optional dependency of AnalyticsKey, not a key: provide AnalyticsKey itself"
        )
    }

    @Test func aChildGraphThatProvidesTheKeyGivesItsServicesTheValue() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MetricsKey.self) { 2 }
        checkout(into: &builder, lifetime: .transient)
        builder.provide(ReportKey.self, lifetime: .transient, dependsOn: CheckoutKey.self, AnalyticsKey?.self) {
            "\($0) / \($1 == nil ? "no" : "some") analytics"
        }
        let parent = try await builder.build()
        #expect(try parent.resolveSynchronously(ReportKey.self) == "untracked with 2 / no analytics")
        var child = parent.makeChildBuilder()
        child.provide(AnalyticsKey.self) { ConsoleAnalytics() }
        let tenant = try await child.build()
        #expect(try tenant.resolveSynchronously(ReportKey.self) == "tracked checkout with 2 / some analytics")
        #expect(try parent.resolveSynchronously(ReportKey.self) == "untracked with 2 / no analytics")
        try await tenant.shutdown()
        try await parent.shutdown()
    }

    @Test func everyDumpFormatDrawsOptionalEdgesApart() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MetricsKey.self) { 1 }
        builder.provide(ReportKey.self, dependsOn: MetricsKey?.self) { "\($0 ?? 0)" }
        checkout(into: &builder)
        let graph = try await builder.build()
        for text in [builder.dump(.text), graph.dump(.text)] {
            #expect(text.contains("├─ MetricsKey (see above)\n└─ AnalyticsKey? (optional, not provided)\n"))
            #expect(text.contains("└─ (optional) MetricsKey: Int [singleton"))
        }
        for dot in [builder.dump(.dot), graph.dump(.dot)] {
            #expect(dot.contains("a0 [label=\"AnalyticsKey\\nnot provided (optional)\", style=\"dashed\""))
            #expect(dot.contains("s2 -> a0 [style=dotted, color=\"#868e96\", label=\"optional\"];"))
            #expect(dot.contains("s1 -> s0 [style=dashed, label=\"optional\"];"))
            #expect(dot.contains("s2 -> s0;"))
        }
        for mermaid in [builder.dump(.mermaid), graph.dump(.mermaid)] {
            #expect(
                mermaid.contains("    a0[\"AnalyticsKey<br/>not provided (optional)\"]\n    s2 -. optional .-> a0\n")
            )
            #expect(mermaid.contains("    s1 -. optional .-> s0\n"))
            #expect(mermaid.contains("    s2 --> s0\n"))
            #expect(mermaid.contains("    class a0 absent\n"))
        }
        for json in [builder.dump(.json), graph.dump(.json)] {
            struct Dump: Decodable {
                struct Service: Decodable {
                    let key: String
                    let dependencies: [String]
                    let dependencyKinds: [String]
                    let absentOptionalDependencies: [String]
                }
                let services: [Service]
            }
            let services = try JSONDecoder().decode(Dump.self, from: Data(json.utf8)).services
            #expect(services.map(\.dependencyKinds) == [[], ["optional"], ["direct"]])
            #expect(services.map(\.absentOptionalDependencies) == [[], [], ["AnalyticsKey"]])
        }
        try await graph.shutdown()
    }

    @Test func overridingAnOptionalWrapperIsRefusedAsAWrapper() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MetricsKey.self) { 1 }
        builder.override(MetricsKey?.self) { 2 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey])
        #expect(
            error.problems[0].message
                == "MetricsKey? is an optional dependency of MetricsKey, not a key: provide MetricsKey itself"
        )
    }
}
