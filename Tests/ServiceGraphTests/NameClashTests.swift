import ServiceGraph
import ServiceProtocolFixture
import Testing

// This file imports ServiceGraph and a module with its own `Service` protocol, as a server app
// imports ServiceGraph and ServiceLifecycle. It compiles only if ServiceGraph declares no `Service`.

private struct Poller: Service {
    func run() async throws {}
}

private struct Signup: Injectable {
    typealias Dependencies = Needs<PollerKey>
    let poller: any Service

    init(dependencies poller: any Service) {
        self.poller = poller
    }
}

private enum PollerKey: ServiceKey { typealias Value = any Service }

@Suite("Names that server apps import")
struct NameClashTests {
    @Test func aLifecycleServiceAndAnInjectableServiceLiveInOneFile() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PollerKey.self) { Poller() }
        builder.provide(Signup.self)
        let graph = try await builder.build()
        #expect(graph[Signup.self].poller is Poller)
        try await graph.shutdown()
    }
}
