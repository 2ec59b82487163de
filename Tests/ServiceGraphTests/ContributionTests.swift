import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum StepsKey: ContributionKey { typealias Element = String }
private enum RequiredStepsKey: ContributionKey {
    typealias Element = String
    static var needsContribution: Bool { true }
}
private enum ChecksKey: KeyedContributionKey { typealias Element = String }
private enum PrefixKey: ServiceKey { typealias Value = String }
private enum PipelineKey: ServiceKey { typealias Value = [String] }
private enum CounterKey: ServiceKey { typealias Value = Counter }

private final class Counter: Sendable {
    let made = Tally()
}

@Suite("Ordered contributions")
struct ContributionTests {
    @Test("a dependent receives every contribution, in registration order when nothing else is said")
    func registrationOrder() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PrefixKey.self) { ">" }
        builder.contribute(StepsKey.self, id: "a") { "a" }
        builder.contribute(StepsKey.self, id: "b", dependsOn: PrefixKey.self) { $0 + "b" }
        builder.contribute(StepsKey.self) { "c" }
        builder.provide(PipelineKey.self, dependsOn: StepsKey.self) { $0 }
        let graph = try await builder.build()
        #expect(graph[PipelineKey.self] == ["a", ">b", "c"])
        #expect(graph[StepsKey.self] == ["a", ">b", "c"])
        try await graph.shutdown()
    }

    @Test("before and after, then position, then registration order")
    func statedOrder() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(StepsKey.self, id: "auth") { "auth" }
        builder.contribute(StepsKey.self, id: "log", before: ["auth"]) { "log" }
        builder.contribute(StepsKey.self, id: "late", position: 10) { "late" }
        builder.contribute(StepsKey.self, id: "early", position: -5) { "early" }
        builder.contribute(StepsKey.self, id: "tail", after: ["late"]) { "tail" }
        builder.contribute(StepsKey.self, id: "plain") { "plain" }
        let graph = try await builder.build()
        #expect(graph[StepsKey.self] == ["early", "log", "auth", "plain", "late", "tail"])
        try await graph.shutdown()
    }

    @Test("a contradiction names every contribution on it and both sites")
    func contradiction() throws {
        var builder = ServiceGraph.Builder()
        let first = #line + 1
        builder.contribute(StepsKey.self, id: "a", before: ["b"]) { "a" }
        builder.contribute(StepsKey.self, id: "b", before: ["c"]) { "b" }
        builder.contribute(StepsKey.self, id: "c", before: ["a"]) { "c" }
        builder.contribute(StepsKey.self, id: "free") { "free" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.contradictoryOrder])
        let problem = error.problems[0]
        #expect(problem.path == ["'a'", "'b'", "'c'", "'a'"])
        for line in first..<(first + 3) { #expect(problem.message.contains("ContributionTests.swift:\(line)")) }
        #expect(!problem.message.contains("ContributionTests.swift:\(first + 3)"))
        #expect(problem.site?.line == first)
    }

    @Test("unknown ids, duplicate ids and overrides of unknown ids are all reported at once")
    func idProblems() throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(StepsKey.self, id: "a", after: ["nope"]) { "a" }
        builder.contribute(StepsKey.self, id: "a") { "again" }
        builder.overrideContribution(StepsKey.self, id: "missing") { "x" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(Set(error.codes) == [.duplicateProvider, .unknownContribution])
        #expect(error.problems.count == 3)
        #expect(error.problems.contains { $0.message.contains("'nope'") && $0.message.contains("'a'") })
    }

    @Test("a list nobody contributes to is empty, unless the key needs a contribution")
    func emptyList() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PipelineKey.self, dependsOn: StepsKey.self) { $0 }
        let graph = try await builder.build()
        #expect(graph[PipelineKey.self] == [])
        try await graph.shutdown()

        var required = ServiceGraph.Builder()
        required.provide(PipelineKey.self, dependsOn: RequiredStepsKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try required.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].message.contains("needs at least one contribution"))
    }

    @Test("overrideContribution replaces one element in its place; override replaces the list")
    func overrides() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(StepsKey.self, id: "a") { "a" }
        builder.contribute(StepsKey.self, id: "b", before: ["a"]) { "b" }
        var test = builder
        test.overrideContribution(StepsKey.self, id: "a") { "fake a" }
        let graph = try await test.build()
        #expect(graph[StepsKey.self] == ["b", "fake a"])
        try await graph.shutdown()

        var whole = builder
        whole.override(StepsKey.self) { ["only"] }
        let replaced = try await whole.build()
        #expect(replaced[StepsKey.self] == ["only"])
        try await replaced.shutdown()

        let original = try await builder.build()
        #expect(original[StepsKey.self] == ["b", "a"])
        try await original.shutdown()
    }

    @Test("the list's lifetime follows its contributions'")
    func lifetimes() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(CounterKey.self) { Counter() }
        builder.contribute(StepsKey.self) { "fixed" }
        builder.contribute(StepsKey.self, lifetime: .transient, dependsOn: CounterKey.self) { counter in
            "made \(counter.made.increment())"
        }
        let graph = try await builder.build()
        #expect(try await graph.resolve(StepsKey.self) == ["fixed", "made 1"])
        #expect(try await graph.resolve(StepsKey.self) == ["fixed", "made 2"])
        try await graph.shutdown()

        // A singleton holding a list with a transient element is captive.
        var captive = builder
        captive.provide(PipelineKey.self, dependsOn: StepsKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try captive.validate() }
        #expect(error.codes == [.captiveDependency])
    }

    @Test("a contribution's own problems are reported with its site, and a cycle through the list as a cycle")
    func graphProblems() throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(StepsKey.self, dependsOn: PrefixKey.self) { $0 }
        let missing = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(missing.codes == [.missingProvider])

        builder.provide(PrefixKey.self, dependsOn: StepsKey.self) { $0.joined() }
        let cycle = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(cycle.codes == [.cycle])
        #expect(cycle.problems[0].path.contains("StepsKey[0]"))
    }

    @Test("each contribution shows in dumps under its position and id")
    func dumps() throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(StepsKey.self, id: "a") { "a" }
        builder.contribute(StepsKey.self, id: "b", before: ["a"]) { "b" }
        builder.contribute(StepsKey.self) { "anonymous" }
        let text = builder.dump(.text)
        #expect(text.contains("StepsKey[0: b]"))
        #expect(text.contains("StepsKey[1: a]"))
        #expect(text.contains("StepsKey[2]"))
        #expect(builder.dump(.json).contains("StepsKey[1: a]"))
        #expect(builder.dump(.dot).contains("StepsKey[0: b]"))
        #expect(builder.dump(.mermaid).contains("StepsKey[0: b]"))
    }

    @Test("a keyed collection is a dictionary by id, with the same checks")
    func keyed() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(PrefixKey.self) { ">" }
        builder.contribute(ChecksKey.self, id: "db", dependsOn: PrefixKey.self) { $0 + "db" }
        builder.contribute(ChecksKey.self, id: "cache") { "cache" }
        let graph = try await builder.build()
        #expect(graph[ChecksKey.self] == ["db": ">db", "cache": "cache"])
        try await graph.shutdown()

        var test = builder
        test.overrideContribution(ChecksKey.self, id: "cache") { "fake" }
        let overridden = try await test.build()
        #expect(overridden[ChecksKey.self] == ["db": ">db", "cache": "fake"])
        try await overridden.shutdown()

        var broken = builder
        broken.contribute(ChecksKey.self, id: "db") { "again" }
        broken.overrideContribution(ChecksKey.self, id: "nope") { "x" }
        let error = try #require(throws: ServiceGraphError.self) { try broken.validate() }
        #expect(error.codes == [.duplicateProvider, .unknownContribution])

        var empty = ServiceGraph.Builder()
        empty.provide(PrefixKey.self, dependsOn: ChecksKey.self) { $0.keys.sorted().joined() }
        let emptyGraph = try await empty.build()
        #expect(emptyGraph[PrefixKey.self] == "")
        try await emptyGraph.shutdown()
    }

    @Test("a child graph reads its parent's list, and its own contributions are merged into it, in the child only")
    func childGraphs() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(StepsKey.self, id: "a") { "a" }
        builder.contribute(StepsKey.self, id: "b") { "b" }
        let parent = try await builder.build()

        var reading = parent.makeChildBuilder()
        reading.provide(PipelineKey.self, dependsOn: StepsKey.self) { $0 }
        let readingChild = try await reading.build()
        #expect(readingChild[PipelineKey.self] == ["a", "b"])

        var own = parent.makeChildBuilder()
        own.contribute(StepsKey.self, id: "child", before: ["b"]) { "child" }
        own.contribute(StepsKey.self, id: "last") { "last" }
        own.overrideContribution(StepsKey.self, id: "a") { "child's a" }
        own.provide(PipelineKey.self, dependsOn: StepsKey.self) { $0 }
        let ownChild = try await own.build()
        #expect(ownChild[PipelineKey.self] == ["child's a", "child", "b", "last"])
        #expect(parent[StepsKey.self] == ["a", "b"])
        // The parent's element is the parent's instance, shared, named with its id in the child too.
        #expect(ownChild.dump(.text).contains("StepsKey[2: b]"))

        // A grandchild merges into the child's merged list.
        var grandchild = ownChild.makeChildBuilder()
        grandchild.contribute(StepsKey.self, id: "first", position: -1) { "first" }
        let grandchildGraph = try await grandchild.build()
        #expect(grandchildGraph[StepsKey.self] == ["first", "child's a", "child", "b", "last"])

        var broken = parent.makeChildBuilder()
        broken.contribute(StepsKey.self, id: "a") { "again" }
        let error = try #require(throws: ServiceGraphError.self) { try broken.validate() }
        #expect(error.codes == [.duplicateProvider])

        try await parent.shutdown()
    }

    @Test("each contribution is created, and reported, before the list, and the list before its dependent")
    func events() async throws {
        let created = EventLog()
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in
            if event.kind == .serviceCreated { created.record(event.key ?? "?") }
        }
        builder.contribute(StepsKey.self, id: "b", after: ["a"]) { "b" }
        builder.contribute(StepsKey.self, id: "a") { "a" }
        builder.provide(PipelineKey.self, dependsOn: StepsKey.self) { $0 }
        let graph = try await builder.build()
        #expect(created.all == ["StepsKey[0: a]", "StepsKey[1: b]", "StepsKey", "PipelineKey"])
        #expect(graph.initializationOrder == ["StepsKey[0: a]", "StepsKey[1: b]", "StepsKey", "PipelineKey"])
        try await graph.shutdown()
    }
}
