import ServiceGraph
import ServiceGraphTestSupport
import Testing

/// A factory or `didAdd` that closes the scope it is making an instance of: the close would wait for
/// that creation, which waits for the close. Refused with `reentrantResolution`, the scope left open.
@Suite("A scope closed from inside its own creation")
struct ReentrantCloseTests {
    /// Where a test puts the scope for a factory or hook to reach.
    final class ScopeHolder: Sendable {
        let scope = Locked<ServiceScope?>(nil)
        let closeErrors = Locked<[ServiceGraphError]>([])

        /// Closes the held scope, recording the close's error, which it throws on.
        func closeHeld() async throws {
            guard let scope = scope.withLock({ $0 }) else { return }
            do {
                try await scope.close()
            } catch {
                closeErrors.withLock { $0.append(error) }
                throw error
            }
        }
    }

    final class ClosesInDidAdd: LifecycleHooks {
        let holder: ScopeHolder
        init(holder: ScopeHolder) { self.holder = holder }
        func didAdd() async throws { try await holder.closeHeld() }
    }

    private enum SelfClosingKey: ServiceKey { typealias Value = Int }
    private enum ClosingHookKey: ServiceKey { typealias Value = ClosesInDidAdd }
    private enum AboveKey: ServiceKey { typealias Value = Int }

    @Test func anAsynchronousFactoryClosingItsOwnScopeIsRefusedAndTheScopeStaysUsable() async throws {
        let holder = ScopeHolder()
        var builder = ServiceGraph.Builder()
        builder.provide(SelfClosingKey.self, lifetime: .scoped) { () async throws -> Int in
            try await holder.closeHeld()
            return 1
        }
        // Through a dependency too: the scoped service above asks for the one whose factory closes.
        builder.provide(AboveKey.self, lifetime: .scoped, dependsOn: SelfClosingKey.self) { $0 + 1 }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        holder.scope.withLock { $0 = scope }
        for key in [AboveKey.self, SelfClosingKey.self] as [any ServiceKey.Type] {
            let error = try await withDeadline(.seconds(20)) {
                do {
                    _ = try await Self.resolve(key, in: scope)
                    return nil as ServiceGraphError?
                } catch {
                    return error as? ServiceGraphError
                }
            }
            #expect(error?.contains(.reentrantResolution) == true, "\(String(describing: error))")
            #expect(!scope.isClosed)
        }
        let refused = holder.closeErrors.withLock { $0 }
        #expect(refused.count == 2)
        #expect(
            refused.allSatisfy { $0.codes == [.reentrantResolution] && $0.problems[0].key.contains("SelfClosingKey") }
        )
        // Nothing was made, and the scope still closes, once, from outside.
        holder.scope.withLock { $0 = nil }
        #expect(try await scope.resolve(AboveKey.self) == 2)
        try await withDeadline(.seconds(20)) { try await scope.close() }
        #expect(scope.isClosed)
        try await graph.shutdown()
    }

    @Test func aDidAddClosingItsOwnScopeIsRefusedAndTheScopeStaysUsable() async throws {
        let holder = ScopeHolder()
        var builder = ServiceGraph.Builder()
        builder.provide(ClosingHookKey.self, lifetime: .scoped) { ClosesInDidAdd(holder: holder) }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        holder.scope.withLock { $0 = scope }
        let error = try await withDeadline(.seconds(20)) {
            do {
                _ = try await scope.resolve(ClosingHookKey.self)
                return nil as ServiceGraphError?
            } catch {
                return error as? ServiceGraphError
            }
        }
        // The hook's failure, carrying the refusal.
        let message = error.map { "\($0)" } ?? "none"
        #expect(message.contains("asked to close while it was making"), "\(message)")
        #expect(holder.closeErrors.withLock { $0.count } == 1, "\(holder.closeErrors.withLock { $0 })")
        #expect(!scope.isClosed)
        holder.scope.withLock { $0 = nil }
        try await withDeadline(.seconds(20)) { try await scope.close() }
        try await graph.shutdown()
    }

    private enum TransientClosingKey: ServiceKey { typealias Value = Int }

    @Test func aTransientsAsynchronousFactoryClosingTheScopeItIsResolvedInIsRefused() async throws {
        let holder = ScopeHolder()
        var builder = ServiceGraph.Builder()
        builder.provide(TransientClosingKey.self, lifetime: .transient) { () async throws -> Int in
            try await holder.closeHeld()
            return 3
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        holder.scope.withLock { $0 = scope }
        let error = try await withDeadline(.seconds(20)) {
            do {
                _ = try await scope.resolve(TransientClosingKey.self)
                return nil as ServiceGraphError?
            } catch {
                return error as? ServiceGraphError
            }
        }
        #expect(error?.contains(.reentrantResolution) == true, "\(String(describing: error))")
        let refused = holder.closeErrors.withLock { $0 }
        #expect(refused.count == 1 && refused[0].problems[0].key.contains("TransientClosingKey"), "\(refused)")
        #expect(!scope.isClosed)
        // Resolved from the graph, not the scope, the transient's close of the scope is not its own: it
        // closes the scope (nothing of the scope is in flight).
        #expect(try await withDeadline(.seconds(20)) { try await graph.resolve(TransientClosingKey.self) } == 3)
        #expect(scope.isClosed)
        // The factory holds the holder, which held the scope, which holds the graph's core: let go.
        holder.scope.withLock { $0 = nil }
        try await graph.shutdown()
    }

    private static func resolve(_ key: any ServiceKey.Type, in scope: ServiceScope) async throws -> Int {
        key == AboveKey.self ? try await scope.resolve(AboveKey.self) : try await scope.resolve(SelfClosingKey.self)
    }
}
