import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

private protocol Greeter: Sendable {
    func greet() -> String
}

private struct PlainGreeter: Greeter {
    func greet() -> String { "hello" }
}

private struct Shouting: Greeter {
    let inner: any Greeter
    func greet() -> String { inner.greet().uppercased() }
}

private struct Exclaiming: Greeter {
    let inner: any Greeter
    let mark: String
    func greet() -> String { inner.greet() + mark }
}

private enum GreeterKey: ServiceKey { typealias Value = any Greeter }
private enum MarkKey: ServiceKey { typealias Value = String }
private enum UserKey: ServiceKey { typealias Value = String }

/// A service with hooks that records them, to check which instances run them and in what order.
private final class Recorded: LifecycleHooks, Sendable {
    let name: String
    let log: HookLog
    let inner: Recorded?

    init(_ name: String, log: HookLog, inner: Recorded? = nil) {
        self.name = name
        self.log = log
        self.inner = inner
    }

    func didAdd() async throws { log.append("didAdd \(name)") }
    func willRemove() async throws { log.append("willRemove \(name)") }
}

private final class HookLog: Sendable {
    private let entries = Locked<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

private enum RecordedKey: ServiceKey { typealias Value = Recorded }
private enum RecordedUserKey: ServiceKey { typealias Value = String }

@Suite("Decorators")
struct DecoratorTests {
    @Test("decorators wrap the value in registration order, the first innermost, with their own dependencies")
    func order() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(MarkKey.self) { "!" }
        builder.provide(GreeterKey.self) { PlainGreeter() }
        builder.decorate(GreeterKey.self, dependsOn: MarkKey.self) { Exclaiming(inner: $0, mark: $1) }
        builder.decorate(GreeterKey.self) { Shouting(inner: $0) }
        builder.provide(UserKey.self, dependsOn: GreeterKey.self) { $0.greet() }
        let graph = try await builder.build()
        #expect(graph[UserKey.self] == "HELLO!")
        #expect(graph[GreeterKey.self].greet() == "HELLO!")
        try await graph.shutdown()
    }

    @Test("an override replaces the inner value and keeps the decorators; removeDecorators takes them away")
    func overrides() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(GreeterKey.self) { PlainGreeter() }
        builder.decorate(GreeterKey.self) { Shouting(inner: $0) }

        var test = builder
        test.override(GreeterKey.self) { Exclaiming(inner: PlainGreeter(), mark: "?") }
        let graph = try await test.build()
        #expect(graph[GreeterKey.self].greet() == "HELLO?")
        try await graph.shutdown()

        var plain = test
        plain.removeDecorators(of: GreeterKey.self)
        let undecorated = try await plain.build()
        #expect(undecorated[GreeterKey.self].greet() == "hello?")
        try await undecorated.shutdown()
    }

    @Test("async decorators, and the decorated key's lifetime for every stage")
    func asyncAndTransient() async throws {
        var builder = ServiceGraph.Builder()
        let made = Tally()
        builder.provide(GreeterKey.self, lifetime: .transient) {
            made.increment()
            return PlainGreeter()
        }
        builder.decorate(GreeterKey.self) { inner async throws -> any Greeter in
            await Task.yield()
            return Shouting(inner: inner)
        }
        let graph = try await builder.build()
        #expect(try await graph.resolve(GreeterKey.self).greet() == "HELLO")
        #expect(try await graph.resolve(GreeterKey.self).greet() == "HELLO")
        #expect(made.count == 2)
        try await graph.shutdown()
    }

    @Test("a decorator that depends on the key it decorates is a cycle; one of a key nobody provides is reported")
    func problems() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(GreeterKey.self) { PlainGreeter() }
        builder.provide(MarkKey.self, dependsOn: GreeterKey.self) { $0.greet() }
        builder.decorate(GreeterKey.self, dependsOn: MarkKey.self) { Exclaiming(inner: $0, mark: $1) }
        let cycle = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(cycle.codes == [.cycle])
        #expect(cycle.problems[0].path.contains("GreeterKey"))
        #expect(cycle.problems[0].path.contains("MarkKey"))

        var orphan = ServiceGraph.Builder()
        orphan.decorate(GreeterKey.self, dependsOn: UserKey.self) { inner, _ in inner }
        let error = try #require(throws: ServiceGraphError.self) { try orphan.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].message.contains("GreeterKey is decorated, but nothing provides it"))
        #expect(error.problems[0].site?.fileID.hasSuffix("DecoratorTests.swift") == true)
    }

    @Test("hooks run once per instance, the wrapped value's before the wrapper's, released in reverse")
    func hooks() async throws {
        let log = HookLog()
        var builder = ServiceGraph.Builder()
        builder.provide(RecordedKey.self) { Recorded("inner", log: log) }
        builder.decorate(RecordedKey.self) { Recorded("wrapper", log: log, inner: $0) }
        // A decorator that returns the value it was given: its hooks still run once.
        builder.decorate(RecordedKey.self) { $0 }
        builder.provide(RecordedUserKey.self, dependsOn: RecordedKey.self) { $0.name }
        let graph = try await builder.build()
        #expect(graph[RecordedUserKey.self] == "wrapper")
        try await graph.shutdown()
        #expect(log.all == ["didAdd inner", "didAdd wrapper", "willRemove wrapper", "willRemove inner"])
    }

    @Test("every stage shows in dumps; a decorated contribution list works")
    func dumpsAndLists() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(GreeterKey.self) { PlainGreeter() }
        builder.decorate(GreeterKey.self) { Shouting(inner: $0) }
        builder.decorate(GreeterKey.self) { Exclaiming(inner: $0, mark: "!") }
        let text = builder.dump(.text)
        #expect(text.contains("GreeterKey (undecorated)"))
        #expect(text.contains("GreeterKey (decorator 1)"))
        #expect(builder.dump(.json).contains("GreeterKey (undecorated)"))

        var lists = ServiceGraph.Builder()
        lists.contribute(StepListKey.self) { "a" }
        lists.decorate(StepListKey.self) { $0 + ["decorated"] }
        let graph = try await lists.build()
        #expect(graph[StepListKey.self] == ["a", "decorated"])
        try await graph.shutdown()
    }
}

private enum StepListKey: ContributionKey { typealias Element = String }
