import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Hooks run once per instance, whichever keys expose it, and a graph runs the hooks of exactly the
/// instances it made.
@Suite("Hook ownership")
struct HookOwnershipTests {
    private enum AliasKey: ServiceKey { typealias Value = HookedService }
    private enum ScopedAliasKey: ServiceKey { typealias Value = HookedService }
    private enum ChildOwnKey: ServiceKey { typealias Value = HookedService }
    private enum MailerKey: ServiceKey { typealias Value = any Mailer }

    private protocol Mailer: Sendable { func send(_ text: String) }

    private final class RecordingMailer: Mailer, LifecycleHooks {
        let log: EventLog
        init(log: EventLog) { self.log = log }
        func send(_ text: String) { log.record("sent \(text)") }
        func didAdd() async throws { log.record("didAdd mailer") }
        func willRemove() async throws { log.record("willRemove mailer") }
    }

    @Test func anAliasOfASingletonDoesNotRunItsHooksAgain() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(AliasKey.self, dependsOn: ServiceA.self) { $0 }
        let graph = try await builder.build()
        #expect(graph[AliasKey.self] === graph[ServiceA.self])
        try await graph.shutdown()
        #expect(log.count(of: "didAdd A") == 1)
        #expect(log.count(of: "willRemove A") == 1)
    }

    @Test func aHookedDoubleRunsItsHooksOnce() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(MailerKey.self) { RecordingMailer(log: EventLog()) }
        let double = builder.override(MailerKey.self, withDouble: { RecordingMailer(log: log) }, as: { $0 })
        let graph = try await builder.build()
        graph[MailerKey.self].send("welcome")
        #expect(graph[double].log.count(of: "sent welcome") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "didAdd mailer") == 1)
        #expect(log.count(of: "willRemove mailer") == 1)
    }

    @Test func aScopedAliasOfASingletonLeavesItsHooksToTheGraph() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(ScopedAliasKey.self, lifetime: .scoped, dependsOn: ServiceA.self) { $0 }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        #expect(try await scope.resolve(ScopedAliasKey.self) === graph[ServiceA.self])
        try await scope.close()
        #expect(log.count(of: "willRemove A") == 0, "closing the scope must not remove the graph's singleton")
        try await graph.shutdown()
        #expect(log.count(of: "didAdd A") == 1)
        #expect(log.count(of: "willRemove A") == 1)
    }

    @Test func aChildsOwnSingletonOfTheParentsClassGetsItsHooks() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("parent A", log: log) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        // Inherited instances come first in the child's build; its own instance of the same class
        // must still get its hooks.
        childBuilder.provide(ChildOwnKey.self) { HookedService("child", log: log) }
        let child = try await childBuilder.build()
        #expect(log.count(of: "didAdd child") == 1)
        #expect(log.count(of: "didAdd parent A") == 1)
        try await child.shutdown()
        #expect(log.count(of: "willRemove child") == 1)
        #expect(log.count(of: "willRemove parent A") == 0)
        try await parent.shutdown()
        #expect(log.count(of: "willRemove parent A") == 1)
    }

    @Test func aChildNeverRunsTheHooksOfItsParentsInstance() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(AliasKey.self, dependsOn: ServiceA.self) { $0 }
        let child = try await childBuilder.build()
        try await child.shutdown()
        try await parent.shutdown()
        #expect(log.count(of: "didAdd A") == 1)
        #expect(log.count(of: "willRemove A") == 1)
    }

    @Test func valueServicesWithHooksAreSeparateInstances() async throws {
        struct Counter: LifecycleHooks {
            let tally: Tally
            func didAdd() async throws { tally.increment() }
        }
        enum First: ServiceKey { typealias Value = Counter }
        enum Second: ServiceKey { typealias Value = Counter }
        let tally = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(First.self) { Counter(tally: tally) }
        builder.provide(Second.self, dependsOn: First.self) { $0 }
        let graph = try await builder.build()
        #expect(tally.count == 2, "a value has no identity: each key's copy is its own instance")
        try await graph.shutdown()
    }
}
