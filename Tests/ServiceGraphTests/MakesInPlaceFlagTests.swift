@testable import ServiceGraph
import Testing

private enum MPSingletonKey: ServiceKey { typealias Value = Int }
private enum MPTransientKey: ServiceKey { typealias Value = Int }
private enum MPSeedKey: ServiceKey { typealias Value = String }
private enum MPOuterSeedKey: ServiceKey { typealias Value = String }
private enum MPOfSeedsKey: ServiceKey { typealias Value = String }
private enum MPOfTransientKey: ServiceKey { typealias Value = Int }
private enum MPOfScopedKey: ServiceKey { typealias Value = String }
private enum MPAsyncKey: ServiceKey { typealias Value = String }
private enum MPOfOuterSeedKey: ServiceKey { typealias Value = String }
private enum MPOfHandlesKey: ServiceKey { typealias Value = Int }

extension ScopeKind {
    fileprivate static let mpSession = ScopeKind("mp-session")
    fileprivate static let mpRequest = ScopeKind("mp-request", inside: .mpSession)
}

/// The build marks the scoped services whose first resolve makes them at once, without looking at their
/// dependencies (``ResolutionTraits/makesInPlaceInScope``): a wrong mark would make an instance before a
/// dependency it needs is there. Debug builds check each marked creation against the dependencies too.
@Suite("Scoped services marked as made in place")
struct MakesInPlaceFlagTests {
    private func graph() async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.provide(MPSingletonKey.self) { 1 }
        builder.provide(MPTransientKey.self, lifetime: .transient) { 2 }
        builder.seed(MPSeedKey.self)
        builder.provide(MPOfSeedsKey.self, lifetime: .scoped, dependsOn: MPSeedKey.self, MPSingletonKey.self) {
            "\($0)-\($1)"
        }
        builder.provide(MPOfTransientKey.self, lifetime: .scoped, dependsOn: MPTransientKey.self) { $0 + 1 }
        builder.provide(MPOfScopedKey.self, lifetime: .scoped, dependsOn: MPOfSeedsKey.self) { $0 + "!" }
        builder.provide(MPAsyncKey.self, lifetime: .scoped, dependsOn: MPSeedKey.self) { seed async in seed }
        builder.provide(
            MPOfHandlesKey.self,
            lifetime: .scoped,
            dependsOn: Lazy<MPOfScopedKey>.self,
            Provider<MPTransientKey>.self
        ) { _, provider in try provider.resolveSynchronously() }
        builder.inScope(.mpSession) { session in
            session.seed(MPOuterSeedKey.self)
        }
        builder.inScope(.mpRequest) { request in
            request.provide(MPOfOuterSeedKey.self, lifetime: .scoped, dependsOn: MPOuterSeedKey.self) { $0 }
        }
        return try await builder.build()
    }

    @Test("only a synchronous scoped service of created singletons, its own kind's seeds and handles is marked")
    func marks() async throws {
        let graph = try await graph()
        let core = graph._core
        func marked<Key: ServiceKey>(_ key: Key.Type) -> Bool { core.makesInPlaceInScope(core.slot(of: key)!) }
        #expect(marked(MPOfSeedsKey.self))
        #expect(marked(MPOfHandlesKey.self))
        #expect(!marked(MPOfTransientKey.self))
        #expect(!marked(MPOfScopedKey.self))
        #expect(!marked(MPAsyncKey.self))
        #expect(!marked(MPOfOuterSeedKey.self))
        #expect(!marked(MPSeedKey.self))
        #expect(!marked(MPSingletonKey.self))
        #expect(!marked(MPTransientKey.self))
        try await graph.shutdown()
    }

    @Test("marked and unmarked services alike are made once, with their dependencies, in each scope")
    func resolves() async throws {
        let graph = try await graph()
        for round in 0..<3 {
            let scope = try graph.makeScope(seeding: ScopeSeed(MPSeedKey.self, "s\(round)"))
            #expect(try await scope.resolve(MPOfScopedKey.self) == "s\(round)-1!")
            #expect(try await scope.resolve(MPOfSeedsKey.self) == "s\(round)-1")
            #expect(try await scope.resolve(MPOfTransientKey.self) == 3)
            #expect(try await scope.resolve(MPAsyncKey.self) == "s\(round)")
            #expect(try await scope.resolve(MPOfHandlesKey.self) == 2)
            try await scope.close()
        }
        let session = try graph.makeScope(.mpSession, seeding: ScopeSeed(MPOuterSeedKey.self, "outer"))
        let request = try session.makeScope(.mpRequest)
        #expect(try await request.resolve(MPOfOuterSeedKey.self) == "outer")
        try await session.close()
        try await graph.shutdown()
    }
}
