import ServiceGraph
import Testing
import ServiceGraphTestSupport

// The graph keeps every instance in one kind of box, whatever its type, and knows the value's layout
// only through what `provide` recorded: its size and alignment, how to deinitialize it, and whether it
// has hooks. These tests put values of many layouts through every lifetime and both paths, and check
// that each is read back intact and deinitialized exactly once, and that a factory that throws leaves
// nothing behind to deinitialize.

private let trackedInstances = LiveCounter()

private protocol Shape: Sendable { var corners: Int { get } }
/// Larger than an existential's inline buffer, so `any Shape` holds it out of line.
private struct Polygon: Shape {
    var corners: Int
    var a = 1, b = 2, c = 3, d = 4
    let owner: LiveInstance
}
private protocol Named: AnyObject, Sendable { var name: String { get } }
private final class Person: Named { let name = "ada" }

/// A struct with references inside, and stricter alignment than a word.
private struct Wide: Sendable {
    var vector: SIMD4<Double>
    var label: String
    var tracked: LiveInstance
}
private struct Empty: Sendable {}

/// A value type with hooks: found and called although it is not a class.
private struct HookedValue: LifecycleHooks {
    let log: EventLog
    func didAdd() async throws { log.record("didAdd") }
    func willRemove() async throws { log.record("willRemove") }
}

private enum PlainInt: ServiceKey { typealias Value = Int }
private enum PlainString: ServiceKey { typealias Value = String }
private enum ShapeKey: ServiceKey { typealias Value = any Shape }
private enum NamedKey: ServiceKey { typealias Value = any Named }
private enum WideKey: ServiceKey { typealias Value = Wide }
private enum EmptyKey: ServiceKey { typealias Value = Empty }
private enum OptionalKey: ServiceKey { typealias Value = LiveInstance? }
private enum TupleKey: ServiceKey { typealias Value = (Int, String, LiveInstance) }
private enum WideTransient: ServiceKey { typealias Value = Wide }
private enum ShapeScoped: ServiceKey { typealias Value = any Shape }
private enum WideAsync: ServiceKey { typealias Value = Wide }
private enum HookedKey: ServiceKey { typealias Value = HookedValue }
private enum FailingWide: ServiceKey { typealias Value = Wide }
private enum Summary: ServiceKey { typealias Value = String }

@Suite("Values of every layout", .serialized)
struct ValueLayoutTests {
    private func builder() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(PlainInt.self) { 42 }
        builder.provide(PlainString.self, dependsOn: PlainInt.self) { "n=\($0)" }
        builder.provide(ShapeKey.self) { Polygon(corners: 5, owner: LiveInstance(1, in: trackedInstances)) }
        builder.provide(NamedKey.self) { Person() }
        builder.provide(WideKey.self, dependsOn: PlainString.self) {
            Wide(vector: SIMD4(1, 2, 3, 4), label: $0, tracked: LiveInstance(2, in: trackedInstances))
        }
        builder.provide(EmptyKey.self) { Empty() }
        builder.provide(OptionalKey.self) { LiveInstance(3, in: trackedInstances) }
        builder.provide(TupleKey.self) { (7, "seven", LiveInstance(4, in: trackedInstances)) }
        builder.provide(WideTransient.self, lifetime: .transient, dependsOn: WideKey.self, ShapeKey.self) {
            wide,
            shape in
            Wide(vector: wide.vector * 2, label: "\(shape.corners)", tracked: LiveInstance(5, in: trackedInstances))
        }
        builder.provide(ShapeScoped.self, lifetime: .scoped, dependsOn: WideTransient.self) { wide in
            Polygon(corners: Int(wide.vector[3]), owner: LiveInstance(6, in: trackedInstances))
        }
        builder.provide(WideAsync.self, dependsOn: TupleKey.self) { tuple async in
            await Task.yield()
            return Wide(vector: SIMD4(repeating: 9), label: tuple.1, tracked: LiveInstance(7, in: trackedInstances))
        }
        builder.provide(
            Summary.self,
            lifetime: .scoped,
            dependsOn: ShapeScoped.self,
            WideTransient.self,
            WideAsync.self,
            EmptyKey.self
        ) { shape, wide, async, _ in
            "\(shape.corners) \(wide.label) \(async.label)"
        }
        return builder
    }

    @Test func everyLayoutIsReadBackIntactOnEveryPath() async throws {
        let graph = try await builder().build()
        #expect(graph[PlainInt.self] == 42)
        #expect(graph[PlainString.self] == "n=42")
        #expect(graph[ShapeKey.self].corners == 5)
        #expect((graph[ShapeKey.self] as? Polygon)?.d == 4)
        #expect(graph[NamedKey.self].name == "ada")
        #expect(graph[NamedKey.self] === graph[NamedKey.self])
        #expect(graph[WideKey.self].vector == SIMD4(1, 2, 3, 4))
        #expect(graph[WideKey.self].label == "n=42")
        #expect(graph[OptionalKey.self]?.id == 3)
        #expect(graph[TupleKey.self].0 == 7 && graph[TupleKey.self].1 == "seven")
        let transient = try graph.resolveSynchronously(WideTransient.self)
        #expect(transient.vector == SIMD4(2, 4, 6, 8) && transient.label == "5")
        let awaited = try await graph.resolve(WideTransient.self)
        #expect(awaited.vector == SIMD4(2, 4, 6, 8))
        #expect(graph[WideAsync.self].vector == SIMD4(repeating: 9))
        #expect(graph[WideAsync.self].label == "seven")
        let scope = try graph.makeScope()
        // The scoped service's factory gets a transient dependency through the prepared values.
        #expect(try await scope.resolve(ShapeScoped.self).corners == 8)
        #expect(try await scope.resolve(Summary.self) == "8 5 seven")
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func everyValueIsDeinitializedOnceWhenReleased() async throws {
        let before = trackedInstances.count
        do {
            let graph = try await builder().build()
            for _ in 0..<3 {
                let scope = try graph.makeScope()
                _ = try await scope.resolve(Summary.self)
                _ = try graph.resolveSynchronously(WideTransient.self)
                try await scope.close()
            }
            // Singletons alive: one tracked instance each in the shape, wide, optional, tuple and async.
            #expect(trackedInstances.count - before == 5)
            try await graph.shutdown()
        }
        #expect(trackedInstances.count == before)
    }

    @Test func aFactoryThatThrowsLeavesNothingToDeinitialize() async throws {
        struct Refused: Error {}
        let before = trackedInstances.count
        var builder = ServiceGraph.Builder()
        builder.provide(WideKey.self) {
            Wide(vector: .zero, label: "ok", tracked: LiveInstance(1, in: trackedInstances))
        }
        builder.provide(FailingWide.self, lifetime: .transient, dependsOn: WideKey.self) { _ in throw Refused() }
        builder.provide(ShapeScoped.self, lifetime: .scoped, dependsOn: FailingWide.self) { wide in
            Polygon(corners: 1, owner: wide.tracked)
        }
        do {
            let graph = try await builder.build()
            for _ in 0..<100 {
                #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(FailingWide.self) }
                let scope = try graph.makeScope()
                await #expect(throws: ServiceGraphError.self) { try await scope.resolve(ShapeScoped.self) }
                try await scope.close()
            }
            // Only the singleton is alive: nothing the failed factories started was kept.
            #expect(trackedInstances.count - before == 1)
            try await graph.shutdown()
        }
        #expect(trackedInstances.count == before)

        // A singleton whose factory throws fails the build, which releases what it made.
        var failing = ServiceGraph.Builder()
        failing.provide(WideKey.self) {
            Wide(vector: .zero, label: "ok", tracked: LiveInstance(1, in: trackedInstances))
        }
        failing.provide(FailingWide.self, dependsOn: WideKey.self) { _ in throw Refused() }
        await #expect(throws: ServiceGraphError.self) { _ = try await failing.build() }
        #expect(trackedInstances.count == before)
    }

    @Test func aValueTypeWithHooksHasThemCalled() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(HookedKey.self) { HookedValue(log: log) }
        let graph = try await builder.build()
        #expect(log.all == ["didAdd"])
        try await graph.shutdown()
        #expect(log.all == ["didAdd", "willRemove"])
    }
}
