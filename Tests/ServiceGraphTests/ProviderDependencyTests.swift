import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

private final class Handler: Sendable {
    let id: Int
    let config: String
    init(id: Int, config: String) {
        self.id = id
        self.config = config
    }
}

private enum SettingsKey: ServiceKey { typealias Value = String }
private enum RequestHandlerKey: ServiceKey { typealias Value = Handler }
private enum AsyncHandlerKey: ServiceKey { typealias Value = Handler }
private enum ServerAppKey: ServiceKey { typealias Value = Server }
private enum UserSessionKey: ServiceKey { typealias Value = Handler }
private enum SummaryKey: ServiceKey { typealias Value = String }
private enum RoundTripKey: ServiceKey { typealias Value = String }

/// A singleton that makes a handler per request through its provider.
private struct Server: Sendable {
    let makeHandler: Provider<RequestHandlerKey>
    let makeAsyncHandler: Provider<AsyncHandlerKey>
}

@Suite("Provider dependencies")
struct ProviderDependencyTests {
    private func builder(handlers: Tally) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(SettingsKey.self) { "prod" }
        builder.provide(RequestHandlerKey.self, lifetime: .transient, dependsOn: SettingsKey.self) {
            Handler(id: handlers.increment(), config: $0)
        }
        builder.provide(AsyncHandlerKey.self, lifetime: .transient, dependsOn: SettingsKey.self) { config in
            await Task.yield()
            return Handler(id: handlers.increment(), config: config)
        }
        builder.provide(ServerAppKey.self, dependsOn: Provider<RequestHandlerKey>.self, Provider<AsyncHandlerKey>.self)
        {
            Server(makeHandler: $0, makeAsyncHandler: $1)
        }
        return builder
    }

    @Test func aSingletonsProviderMakesANewTransientOnEachCall() async throws {
        let handlers = Tally()
        let graph = try await builder(handlers: handlers).build()
        #expect(handlers.count == 0, "nothing is made with the server")
        let server = graph[ServerAppKey.self]
        let first = try await server.makeHandler()
        let second = try server.makeHandler.resolveSynchronously()
        let third = try await server.makeAsyncHandler()
        #expect(Set([first.id, second.id, third.id]).count == 3)
        #expect([first.config, second.config, third.config] == ["prod", "prod", "prod"])
        let blocked = try #require(throws: ServiceGraphError.self) {
            try server.makeAsyncHandler.resolveSynchronously()
        }
        #expect(blocked.codes == [.requiresAwait])
        try await graph.shutdown()
        let afterShutdown = try await #require(throws: ServiceGraphError.self) { try await server.makeHandler() }
        #expect(afterShutdown.codes == [.graphShutDown])
    }

    @Test func aProviderDoesNotKeepItsGraphAlive() async throws {
        let handlers = Tally()
        var builder = builder(handlers: handlers)
        builder.requiresShutdown = false
        var graph: ServiceGraph? = try await builder.build()
        let server = graph![ServerAppKey.self]
        weak let weakGraph = graph
        graph = nil
        #expect(weakGraph == nil)
        let error = try await #require(throws: ServiceGraphError.self) { try await server.makeHandler() }
        #expect(error.codes == [.graphShutDown])
        #expect(error.problems[0].message == "a provider of RequestHandlerKey was called after its graph was released")
    }

    @Test func aProviderMadeInAScopeResolvesInThatScope() async throws {
        let handlers = Tally()
        var builder = builder(handlers: handlers)
        builder.provide(UserSessionKey.self, lifetime: .scoped, dependsOn: SettingsKey.self) {
            Handler(id: handlers.increment(), config: "session \($0)")
        }
        builder.provide(SummaryKey.self, lifetime: .transient, dependsOn: Provider<UserSessionKey>.self) { session in
            "\(try session.resolveSynchronously().config)"
        }
        builder.provide(RoundTripKey.self, lifetime: .transient, dependsOn: Provider<UserSessionKey>.self) { session in
            "\(try await session().id)"
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let session = try await scope.resolve(UserSessionKey.self)
        #expect(try await scope.resolve(RoundTripKey.self) == "\(session.id)")
        #expect(try await scope.resolve(RoundTripKey.self) == "\(session.id)")
        // A scoped service already created is not read synchronously (see resolveSynchronously).
        await #expect(throws: ServiceGraphError.self) { try await scope.resolve(SummaryKey.self) }
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func validationChecksProviderEdges() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(UserSessionKey.self, lifetime: .scoped) { Handler(id: 0, config: "") }
        builder.provide(RequestHandlerKey.self, lifetime: .transient) { Handler(id: 1, config: "") }
        // A singleton may hold a provider of a transient and of a singleton, not of a scoped service.
        builder.provide(ServerAppKey.self, dependsOn: Provider<RequestHandlerKey>.self, Provider<AsyncHandlerKey>.self)
        {
            Server(makeHandler: $0, makeAsyncHandler: $1)
        }
        builder.provide(AsyncHandlerKey.self) { Handler(id: 2, config: "") }
        builder.provide(SummaryKey.self, dependsOn: Provider<UserSessionKey>.self) { _ in "" }
        // A cycle through a provider is still a cycle.
        builder.provide(RoundTripKey.self, lifetime: .transient, dependsOn: Provider<SettingsKey>.self) { _ in "" }
        builder.provide(SettingsKey.self, lifetime: .transient, dependsOn: RoundTripKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle, .captiveDependency])
        #expect(error.problems[0].message.contains("(through a provider)"))
        #expect(Set(error.problems[0].path) == ["RoundTripKey", "SettingsKey"])
        #expect(error.problems[1].key == "SummaryKey")
        #expect(
            error.problems[1].message
                == "captive dependency: SummaryKey (singleton) depends on a provider of UserSessionKey (scoped), which would resolve it outside any scope"
        )
    }

    @Test func aMissingKeyBehindAProviderIsAMissingProvider() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(SummaryKey.self, dependsOn: Provider<RequestHandlerKey>.self) { _ in "" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].path == ["SummaryKey", "RequestHandlerKey"])
    }

    @Test func aSingletonWaitsForNothingBehindItsProviderEvenWithAsyncFactories() async throws {
        // The second build phase (an async singleton) must not wait for the transient behind a provider.
        let handlers = Tally()
        var builder = builder(handlers: handlers)
        builder.provide(SummaryKey.self, dependsOn: ServerAppKey.self) { server in
            await Task.yield()
            return "report by \(try await server.makeAsyncHandler().config)"
        }
        let graph = try await builder.build()
        #expect(graph[SummaryKey.self] == "report by prod")
        try await graph.shutdown()
    }

    @Test func providingAProviderIsRefused() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Provider<RequestHandlerKey>.self) { fatalError("never run") }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey])
        #expect(
            error.problems[0].message
                == "Provider<RequestHandlerKey> is a provider of RequestHandlerKey, not a key: provide RequestHandlerKey itself"
        )
    }

    @Test func dumpsDrawProviderEdgesApart() async throws {
        let graph = try await builder(handlers: Tally()).build()
        let text = graph.dump(.text)
        #expect(text.contains("├─ (provider) RequestHandlerKey: Handler [transient]"))
        #expect(graph.dump(.dot).contains("s3 -> s1 [style=dashed, label=\"provider\"];"))
        #expect(graph.dump(.mermaid).contains("    s3 -. provider .-> s1\n"))
        struct Dump: Decodable {
            struct Service: Decodable { let dependencyKinds: [String] }
            let services: [Service]
        }
        let json = try JSONDecoder().decode(Dump.self, from: Data(graph.dump(.json).utf8))
        #expect(json.services[3].dependencyKinds == ["provider", "provider"])
        try await graph.shutdown()
    }

    @Test func aSingletonMayCallItsProviderWhileTheGraphIsBuilt() async throws {
        // The transient behind the provider needs an async singleton: the holder starts after it, so its
        // factory and its didAdd may call the provider.
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(SettingsKey.self) { () async throws -> String in
            try await Task.sleep(for: .milliseconds(50))
            return "slow"
        }
        builder.provide(RequestHandlerKey.self, lifetime: .transient, dependsOn: SettingsKey.self) {
            Handler(id: 0, config: $0)
        }
        builder.provide(SummaryKey.self, dependsOn: Provider<RequestHandlerKey>.self) { makeHandler in
            "warmed up with \(try await makeHandler().config)"
        }
        builder.provide(RoundTripKey.self, dependsOn: Provider<RequestHandlerKey>.self) { makeHandler in
            log.record("made")
            return "starter"
        }
        let graph = try await builder.build()
        #expect(graph[SummaryKey.self] == "warmed up with slow")
        try await graph.shutdown()
    }

    @Test func aSingletonsProviderOfATransientThatNeedsAScopeIsCaptive() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(UserSessionKey.self, lifetime: .scoped) { Handler(id: 0, config: "") }
        builder.provide(RequestHandlerKey.self, lifetime: .transient, dependsOn: UserSessionKey.self) { $0 }
        builder.provide(SummaryKey.self, dependsOn: Provider<RequestHandlerKey>.self) { _ in "" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
        #expect(
            error.problems[0].message
                == "captive dependency: SummaryKey (singleton) depends on a provider of RequestHandlerKey (transient, which needs a scoped service), which would resolve it outside any scope"
        )
    }

    @Test func aWrapperOfAWrapperIsRefused() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(RequestHandlerKey.self, lifetime: .transient) { Handler(id: 0, config: "") }
        builder.provide(SummaryKey.self, dependsOn: Provider<RequestHandlerKey>?.self) { _ in "" }
        builder.provide(RoundTripKey.self, dependsOn: Provider<RequestHandlerKey?>.self) { _ in "" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey, .invalidKey])
        #expect(Set(error.problems.map(\.key)) == ["SummaryKey", "RoundTripKey"])
        #expect(
            error.problems.allSatisfy {
                $0.message.contains("only a plain key can be optional, lazy or behind a provider")
            }
        )
    }
}
