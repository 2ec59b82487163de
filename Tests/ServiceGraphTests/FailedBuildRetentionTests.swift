import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Something a handler or a factory captures, watched through a `weak var`.
private final class Witness: Sendable {}

/// The store of the watched graph, whose `didAdd` can be told to fail.
private final class RetentionStore: LifecycleHooks, Sendable {
    let failsDidAdd: Bool

    init(failsDidAdd: Bool) {
        self.failsDidAdd = failsDidAdd
    }

    func didAdd() async throws {
        if failsDidAdd { throw TestFailure("didAdd of the store failed on purpose") }
    }
}

private enum RetentionConfig: ServiceKey { typealias Value = String }
private enum RetentionStoreKey: ServiceKey { typealias Value = RetentionStore }
private enum RetentionApp: ServiceKey { typealias Value = Int }
private enum RetentionRequest: ServiceKey { typealias Value = [String] }
/// The one service of the live graph the update fails on.
private enum RetentionLiveBase: ServiceKey { typealias Value = String }

/// The events a handler kept, as a handler that logs them into a collection does.
private final class KeptEvents: Sendable {
    private let events = Locked<[ServiceGraphEvent]>([])

    func keep(_ event: ServiceGraphEvent) { events.withLock { $0.append(event) } }

    var all: [ServiceGraphEvent] { events.withLock { $0 } }
}

/// What the failed build's handler and factories captured, watched weakly.
private struct Witnesses {
    weak var handler: Witness?
    /// Captured by the factory of a singleton created before the failure.
    weak var created: Witness?
    /// Captured by the factory of a singleton that depends on the failing one, never created.
    weak var notCreated: Witness?
    /// Captured by a transient's factory, which a built graph keeps.
    weak var transient: Witness?

    /// The names of the witnesses still alive.
    var alive: [String] {
        [("handler", handler), ("created", created), ("notCreated", notCreated), ("transient", transient)]
            .filter { $0.1 != nil }.map(\.0)
    }
}

private enum Failure {
    case factory
    case didAdd
}

/// A failed build, a failed child build and a failed update keep, in their errors (and the events of
/// the failure), neither the event handler nor the factories and what they capture, and their dumps
/// still show the graph as far as it was built.
@Suite("Failed build retention")
struct FailedBuildRetentionTests {
    /// Config ← Store ← App, Config ← Request (transient): the store fails as `failure` says. Every
    /// closure the builder gets captures a witness of its own.
    private static func watchedProviders(
        failing failure: Failure,
        into builder: inout ServiceGraph.Builder,
        keeping kept: KeptEvents? = nil
    ) -> Witnesses {
        let (handler, created, notCreated, transient) = (Witness(), Witness(), Witness(), Witness())
        builder.eventHandler = { [handler] event in
            _ = handler
            kept?.keep(event)
        }
        builder.provide(RetentionConfig.self) { [created] in
            _ = created
            return "config"
        }
        builder.provide(RetentionStoreKey.self, dependsOn: RetentionConfig.self) { _ in
            if failure == .factory { throw TestFailure("the store's factory failed on purpose") }
            return RetentionStore(failsDidAdd: failure == .didAdd)
        }
        builder.provide(RetentionApp.self, dependsOn: RetentionStoreKey.self) { [notCreated] _ in
            _ = notCreated
            return 1
        }
        builder.provide(RetentionRequest.self, lifetime: .transient, dependsOn: RetentionConfig.self) {
            [transient] config in
            _ = transient
            return [config]
        }
        return Witnesses(handler: handler, created: created, notCreated: notCreated, transient: transient)
    }

    /// Builds the watched graph; only the error (and `kept`'s events) outlive the call.
    private static func failedBuild(
        _ failure: Failure,
        keeping kept: KeptEvents? = nil
    ) async throws -> (ServiceGraphError, Witnesses) {
        var builder = ServiceGraph.Builder()
        let witnesses = watchedProviders(failing: failure, into: &builder, keeping: kept)
        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        return (try #require(error), witnesses)
    }

    /// The dump of the failed build in every format: the failing service and its path, what was
    /// created before it (with its place in the initialization order), and what it blocked.
    private static func expectDumpShowsTheFailure(
        of error: ServiceGraphError,
        _ failure: Failure,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let text = try #require(error.dump(.text), sourceLocation: sourceLocation)
        let file = "ServiceGraphTests/FailedBuildRetentionTests.swift"
        let expected = [
            "ServiceGraph: 4 services (3 singleton, 0 scoped, 1 transient)",
            "RetentionApp: Int [singleton] @ \(file):",
            "(not built: depends on a problem)",
            "RetentionStoreKey: RetentionStore [singleton] @ \(file):",
            failure == .factory ? "✗ factory failed" : "✗ didAdd failed",
            "RetentionConfig: String [singleton, #1] @ \(file):",
            "RetentionRequest: Array<String> [transient] @ \(file):",
            "Initialization order (build took ",
            "  1. RetentionConfig  factory ",
            failure == .factory
                ? "  1. the factory of RetentionStoreKey threw: the store's factory failed on purpose "
                    + "(path: RetentionApp → RetentionStoreKey) [provided at \(file):"
                : "  1. didAdd of RetentionStoreKey threw: didAdd of the store failed on purpose "
                    + "(path: RetentionApp → RetentionStoreKey) [provided at \(file):",
        ]
        for line in expected {
            #expect(text.contains(line), "the text dump lacks \(line):\n\(text)", sourceLocation: sourceLocation)
        }
        let dot = try #require(error.dump(.dot), sourceLocation: sourceLocation)
        #expect(dot.contains("  s1 -> s0;\n"), "RetentionStoreKey → RetentionConfig", sourceLocation: sourceLocation)
        #expect(dot.contains("RetentionConfig\\nString\\nsingleton · #1"), sourceLocation: sourceLocation)
        let mermaid = try #require(error.dump(.mermaid), sourceLocation: sourceLocation)
        #expect(mermaid.contains("    class s1 rootCause\n"), sourceLocation: sourceLocation)
        #expect(mermaid.contains("    class s2 affected\n"), sourceLocation: sourceLocation)
        let json = try #require(error.dump(.json), sourceLocation: sourceLocation)
        #expect(
            json.contains(#""initializationOrder": [\#n    "RetentionConfig"\#n  ]"#),
            sourceLocation: sourceLocation
        )
        #expect(json.contains(#""path": ["RetentionApp", "RetentionStoreKey"]"#), sourceLocation: sourceLocation)
        #expect(json.contains(#""mark": "rootCause""#), sourceLocation: sourceLocation)
    }

    @Test(arguments: [Failure.factory, .didAdd])
    fileprivate func aKeptErrorKeepsNeitherTheHandlerNorTheFactories(failing failure: Failure) async throws {
        let (error, witnesses) = try await Self.failedBuild(failure)
        #expect(witnesses.alive.isEmpty, "kept by the error: \(witnesses.alive)")
        try Self.expectDumpShowsTheFailure(of: error, failure)
    }

    @Test func theBuildFailedEventKeepsNeitherTheHandlerNorTheFactories() async throws {
        let kept = KeptEvents()
        let (error, witnesses) = try await Self.failedBuild(.factory, keeping: kept)
        let event = try #require(kept.all.first { $0.kind == .buildFailed })
        #expect(witnesses.alive.isEmpty, "kept by the error or the events: \(witnesses.alive)")
        let eventError = try #require(event.error as? ServiceGraphError)
        #expect(eventError.problems.map(\.path) == [["RetentionApp", "RetentionStoreKey"]])
        #expect(eventError.dump() == nil, "an event's error carries no dump")
        try Self.expectDumpShowsTheFailure(of: error, .factory)
    }

    @Test(arguments: [Failure.factory, .didAdd])
    fileprivate func aChildBuildsErrorKeepsNeitherTheHandlerNorTheFactories(failing failure: Failure) async throws {
        let parent = try await ServiceGraph.Builder().build()
        let (error, witnesses) = try await Self.failedChildBuild(of: parent, failure)
        #expect(witnesses.alive.isEmpty, "kept by the error: \(witnesses.alive)")
        try Self.expectDumpShowsTheFailure(of: error, failure)
        try await parent.shutdown()
    }

    /// Builds the watched graph as a child of `parent`; only the error outlives the call.
    private static func failedChildBuild(
        of parent: ServiceGraph,
        _ failure: Failure
    ) async throws -> (ServiceGraphError, Witnesses) {
        var builder = parent.makeChildBuilder()
        let witnesses = watchedProviders(failing: failure, into: &builder)
        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        return (try #require(error), witnesses)
    }

    @Test(arguments: [Failure.factory, .didAdd])
    fileprivate func anUpdatesErrorKeepsNeitherTheHandlerNorTheFactories(failing failure: Failure) async throws {
        let (error, witnesses) = try await Self.failedUpdate(failure)
        #expect(witnesses.alive.isEmpty, "kept by the error: \(witnesses.alive)")
        let text = try #require(error.dump(.text))
        #expect(text.contains("RetentionLiveBase: String [singleton, #1]"), "taken over from generation 1:\n\(text)")
        #expect(text.contains("RetentionConfig: String [singleton, #2]"), "made before the failure")
        #expect(text.contains(failure == .factory ? "✗ factory failed" : "✗ didAdd failed"))
        #expect(text.contains("(path: RetentionApp → RetentionStoreKey)"))
    }

    /// Updates a live graph with the watched providers, and the watched handler for the next generation,
    /// then shuts the live graph down: only the error outlives the call. (The live graph's builder keeps
    /// the last plan it checked, the failed update's, until its next update: what the error keeps is
    /// what this looks at.)
    private static func failedUpdate(_ failure: Failure) async throws -> (ServiceGraphError, Witnesses) {
        var builder = ServiceGraph.Builder()
        builder.provide(RetentionLiveBase.self) { "base" }
        let live = try await LiveGraph(builder)
        let witnesses = Locked<Witnesses?>(nil)
        let error = await #expect(throws: ServiceGraphError.self) {
            try await live.update { next in
                let watched = watchedProviders(failing: failure, into: &next)
                witnesses.withLock { $0 = watched }
            }
        }
        #expect(live.generation == 1)
        try await live.shutdown()
        return (try #require(error), try #require(witnesses.withLock { $0 }))
    }
}
