import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum PayConfigKey: ServiceKey { typealias Value = String }
private enum PayClientKey: ServiceKey { typealias Value = String }
private enum PayCheckoutKey: ServiceKey { typealias Value = String }
private enum PayReportKey: ServiceKey { typealias Value = String }
private enum PaySharedKey: ServiceKey { typealias Value = String }
private enum PayHandlersKey: ContributionKey { typealias Element = String }

private struct PaymentsModule: GraphModule {
    let registered: Tally

    var privateKeys: [any ServiceKey.Type] { [PayClientKey.self] }

    func register(in builder: inout ServiceGraph.Builder) {
        registered.increment()
        builder.provide(PayClientKey.self, dependsOn: PayConfigKey.self) { "client(\($0))" }
        builder.provide(PayCheckoutKey.self, dependsOn: PayClientKey.self) { "checkout via \($0)" }
        builder.contribute(PayHandlersKey.self, id: "payments") { "payments handler" }
        builder.decorate(PayClientKey.self) { "logged " + $0 }
    }
}

/// Builds on the payments module: includes it, and it is still included once.
private struct ReportsModule: GraphModule {
    let payments: PaymentsModule

    var name: String { "Reports" }

    func register(in builder: inout ServiceGraph.Builder) {
        builder.include(payments)
        builder.provide(PayReportKey.self, dependsOn: PayCheckoutKey.self) { "report of \($0)" }
        builder.contribute(PayHandlersKey.self, id: "reports", after: ["payments"]) { "reports handler" }
    }
}

private struct SharedProvider: GraphModule {
    let name: String

    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(PaySharedKey.self) { "shared" }
    }
}

@Suite("Modules")
struct ModuleTests {
    @Test("a module's providers, contributions and decorators are added once, however often it is included")
    func includeOnce() async throws {
        let registered = Tally()
        let payments = PaymentsModule(registered: registered)
        var builder = ServiceGraph.Builder()
        builder.provide(PayConfigKey.self) { "config" }
        builder.include(payments)
        builder.include(ReportsModule(payments: payments))
        builder.include(payments)
        #expect(registered.count == 1)
        let graph = try await builder.build()
        #expect(graph[PayReportKey.self] == "report of checkout via logged client(config)")
        #expect(graph[PayHandlersKey.self] == ["payments handler", "reports handler"])
        try await graph.shutdown()
    }

    @Test("a service outside a module that depends on one of its private keys is reported, with both sites")
    func privateKeys() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PayConfigKey.self) { "config" }
        builder.include(PaymentsModule(registered: Tally()))
        let line = #line + 1
        builder.provide(PayReportKey.self, dependsOn: PayClientKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
        let problem = error.problems[0]
        #expect(problem.site?.line == line)
        #expect(problem.path == ["PayReportKey", "PayClientKey"])
        #expect(problem.message.contains("private to module PaymentsModule"))
        #expect(problem.message.contains("outside any module"))
        #expect(problem.message.contains("ModuleTests.swift:"))

        // Another module depending on it is refused too; the module's own services are not.
        var other = ServiceGraph.Builder()
        other.provide(PayConfigKey.self) { "config" }
        other.include(PaymentsModule(registered: Tally()))
        other.include(ClientReader())
        let otherError = try #require(throws: ServiceGraphError.self) { try other.validate() }
        #expect(otherError.codes == [.privateDependency])
        #expect(otherError.problems[0].message.contains("in module ClientReader"))
    }

    @Test("two modules providing one key is a duplicate naming both modules")
    func duplicates() throws {
        var builder = ServiceGraph.Builder()
        builder.include(SharedProvider(name: "First"))
        builder.include(SharedProvider(name: "Second"))
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.duplicateProvider])
        #expect(error.problems[0].message.contains("module First"))
        #expect(error.problems[0].message.contains("module Second"))
    }

    @Test("dumps group services by module in every format, before and after the build")
    func dumps() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PayConfigKey.self) { "config" }
        builder.include(PaymentsModule(registered: Tally()))
        let text = builder.dump(.text)
        #expect(text.contains("PayCheckoutKey: String [singleton, module PaymentsModule]"))
        #expect(text.contains("PayConfigKey: String [singleton] @"))
        let dot = builder.dump(.dot)
        #expect(dot.contains("subgraph cluster_module0"))
        #expect(dot.contains("label=\"module PaymentsModule\""))
        let mermaid = builder.dump(.mermaid)
        #expect(mermaid.contains("subgraph module0[\"module PaymentsModule\"]"))
        let json = try #require(builder.dump(.json).data(using: .utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let services = try #require(object["services"] as? [[String: Any]])
        let modules = Dictionary(
            uniqueKeysWithValues: services.map { ($0["key"] as? String ?? "", $0["module"] as? String) }
        )
        #expect(modules["PayCheckoutKey"] == .some("PaymentsModule"))
        #expect(modules["PayConfigKey"] == .some(nil))

        let graph = try await builder.build()
        #expect(graph.dump(.text).contains("PayCheckoutKey: String [singleton, #"))
        #expect(graph.dump(.text).contains(", module PaymentsModule]"))
        #expect(graph.dump(.dot).contains("subgraph cluster_module0"))
        try await graph.shutdown()
    }

    @Test("a module builds alone with what it needs from outside provided by the test")
    func alone() async throws {
        var builder = ServiceGraph.Builder()
        builder.include(PaymentsModule(registered: Tally()))
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "PayConfigKey")

        builder.provide(PayConfigKey.self) { "test config" }
        let graph = try await builder.build()
        #expect(graph[PayCheckoutKey.self] == "checkout via logged client(test config)")
        try await graph.shutdown()
    }

    @Test(
        "Graphviz renders a graph of modules, contributions and decorators",
        .enabled(if: Graphviz.isAvailable || ProcessInfo.processInfo.environment["CI"] != nil)
    )
    func graphvizRendersModules() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PayConfigKey.self) { "config" }
        builder.include(PaymentsModule(registered: Tally()))
        builder.include(SharedProvider(name: "Quote\" {odd} <name>"))
        let svg = try Graphviz.render(builder.dump(.dot))
        #expect(svg.contains("<svg"))
        #expect(svg.contains("module PaymentsModule"))
        #expect(svg.contains("PayClientKey (undecorated)"))
        #expect(svg.contains("PayHandlersKey[0: payments]"))
        let graph = try await builder.build()
        #expect(try Graphviz.render(graph.dump(.dot)).contains("module PaymentsModule"))
        try await graph.shutdown()
    }
}

private struct ClientReader: GraphModule {
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(PayReportKey.self, dependsOn: PayClientKey.self) { $0 }
    }
}
