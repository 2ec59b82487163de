import ServiceGraph
import Testing
import ServiceGraphTestSupport

// Values of unusual layouts through every lifetime and both paths, with keys generic over the value
// type: registered and read from specialized code, and registered from code that stays generic (so
// the layout's `is AnyObject.Type` answer is the runtime's) and read from specialized code.

private let layoutInstances = LiveCounter()

private class RLBase: @unchecked Sendable {
    let tracked: LiveInstance
    init(_ id: Int) { tracked = LiveInstance(id, in: layoutInstances) }
    func kind() -> String { "base" }
}
private final class RLDerived: RLBase, @unchecked Sendable {
    let extra = SIMD4<Double>(1, 2, 3, 4)
    override func kind() -> String { "derived" }
}
private final class RLGeneric<T: Sendable>: Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
private protocol RLNamed: AnyObject, Sendable { var tracked: LiveInstance { get } }
private final class RLPerson: RLNamed {
    let tracked: LiveInstance
    init(_ id: Int) { tracked = LiveInstance(id, in: layoutInstances) }
}
private protocol RLPlain: Sendable { var n: Int { get } }
private struct RLPlainBig: RLPlain {
    var n: Int
    var pad = SIMD8<Double>(repeating: 7)
    var tracked: LiveInstance
}
@_alignment(16) private struct RLZeroAligned: Sendable {}
private struct RLEmpty: Sendable {}
private struct RLLarge: Sendable {
    var a: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)
    var b: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)
    var s: String
    var t: LiveInstance
    var v: SIMD16<Float>
}
private enum RLPayload: Sendable {
    case object(LiveInstance)
    case vector(SIMD4<Double>, LiveInstance)
    case none
}

/// Roles of the generic keys below.
private enum RSingle {}
private enum RTransient {}
private enum RAsyncTransient {}
private enum RScoped {}
private enum RAsyncSingleton {}
private enum RAsyncScoped {}
private enum RConsumer {}
private enum RConsumerSync {}
private enum RLink {}

private enum RLKey<T: Sendable, Role>: ServiceKey { typealias Value = T }
/// A link of a chain: `Link<Link<...<Root>>>`.
private enum RLChain<Inner: ServiceKey>: ServiceKey { typealias Value = Inner.Value }

/// Registers the services of one value type: every lifetime, both paths, and consumers that read every
/// one of them on the asynchronous path (prepared values), checking each against `check`.
private func register<T: Sendable>(
    _ builder: inout ServiceGraph.Builder,
    make: @escaping @Sendable (Int) -> T,
    check: @escaping @Sendable (T) -> Bool
) {
    builder.provide(RLKey<T, RSingle>.self) { make(1) }
    builder.provide(RLKey<T, RTransient>.self, lifetime: .transient, dependsOn: RLKey<T, RSingle>.self) { s in
        precondition(check(s))
        return make(2)
    }
    builder.provide(RLKey<T, RAsyncTransient>.self, lifetime: .transient, dependsOn: RLKey<T, RTransient>.self) {
        t async in
        await Task.yield()
        precondition(check(t))
        return make(3)
    }
    builder.provide(
        RLKey<T, RScoped>.self,
        lifetime: .scoped,
        dependsOn: RLKey<T, RAsyncTransient>.self,
        RLKey<T, RTransient>.self,
        RLKey<T, RSingle>.self
    ) { a, t, s in
        precondition(check(a) && check(t) && check(s))
        return make(4)
    }
    builder.provide(RLKey<T, RAsyncSingleton>.self, dependsOn: RLKey<T, RSingle>.self) { s async in
        await Task.yield()
        precondition(check(s))
        return make(5)
    }
    builder.provide(
        RLKey<T, RAsyncScoped>.self,
        lifetime: .scoped,
        dependsOn: RLKey<T, RScoped>.self,
        RLKey<T, RAsyncTransient>.self
    ) { s, a async in
        await Task.yield()
        precondition(check(s) && check(a))
        return make(6)
    }
    // Async consumer: every kind of dependency, read from the prepared values.
    builder.provide(
        RLKey<[Bool], (T, RConsumer)>.self,
        lifetime: .transient,
        dependsOn: RLKey<T, RSingle>.self,
        RLKey<T, RTransient>.self,
        RLKey<T, RAsyncTransient>.self,
        RLKey<T, RScoped>.self
    ) { s, t, a, sc async in
        [check(s), check(t), check(a), check(sc)]
    }
    // Sync consumer on the async path (its dependencies need awaiting).
    builder.provide(
        RLKey<[Bool], (T, RConsumerSync)>.self,
        lifetime: .scoped,
        dependsOn: RLKey<T, RAsyncSingleton>.self,
        RLKey<T, RAsyncScoped>.self,
        RLKey<T, RAsyncTransient>.self,
        RLKey<T, RScoped>.self
    ) { s, a, t, sc in
        [check(s), check(a), check(t), check(sc)]
    }
}

/// The same registration, kept generic: nothing in it is specialized for `T`.
@_optimize(none)
private func registerUnspecialized<T: Sendable>(
    _ builder: inout ServiceGraph.Builder,
    make: @escaping @Sendable (Int) -> T,
    check: @escaping @Sendable (T) -> Bool
) {
    register(&builder, make: make, check: check)
}

/// Reads every service of `T` in specialized code (inlined into the concrete caller).
@inline(__always)
private func readAll<T: Sendable>(
    _ graph: ServiceGraph,
    _ type: T.Type,
    check: (T) -> Bool
) async throws -> [Bool] {
    var results: [Bool] = []
    results.append(check(graph[RLKey<T, RSingle>.self]))
    results.append(check(graph[RLKey<T, RAsyncSingleton>.self]))
    results.append(check(try graph.resolveSynchronously(RLKey<T, RTransient>.self)))
    results.append(check(try await graph.resolve(RLKey<T, RTransient>.self)))
    results.append(check(try await graph.resolve(RLKey<T, RAsyncTransient>.self)))
    let scope = try graph.makeScope()
    results.append(check(try await scope.resolve(RLKey<T, RScoped>.self)))
    results.append(check(try await scope.resolve(RLKey<T, RScoped>.self)))
    results.append(check(try await scope.resolve(RLKey<T, RAsyncScoped>.self)))
    results += try await scope.resolve(RLKey<[Bool], (T, RConsumer)>.self)
    results += try await scope.resolve(RLKey<[Bool], (T, RConsumerSync)>.self)
    try await scope.close()
    return results
}

/// Reads them from code that is not specialized.
@_optimize(none)
private func readAllUnspecialized<T: Sendable>(
    _ graph: ServiceGraph,
    _ type: T.Type,
    check: (T) -> Bool
) async throws -> [Bool] {
    try await readAll(graph, type, check: check)
}

private func exercise<T: Sendable>(
    _ type: T.Type,
    sourceLocation: SourceLocation = #_sourceLocation,
    make: @escaping @Sendable (Int) -> T,
    check: @escaping @Sendable (T) -> Bool
) async throws {
    let before = layoutInstances.count
    for (specializedRegistration, specializedRead) in [(true, true), (false, true), (true, false), (false, false)] {
        do {
            var builder = ServiceGraph.Builder()
            if specializedRegistration {
                register(&builder, make: make, check: check)
            } else {
                registerUnspecialized(&builder, make: make, check: check)
            }
            let graph = try await builder.build()
            let results =
                specializedRead
                ? try await readAll(graph, T.self, check: check)
                : try await readAllUnspecialized(graph, T.self, check: check)
            #expect(
                results.allSatisfy { $0 },
                "\(T.self) registered \(specializedRegistration ? "" : "un")specialized, read \(specializedRead ? "" : "un")specialized: \(results)",
                sourceLocation: sourceLocation
            )
            try await graph.shutdown()
        }
        #expect(
            layoutInstances.count == before,
            "\(T.self) leaked or over-released",
            sourceLocation: sourceLocation
        )
    }
}

@Suite("Unusual value layouts on every path", .serialized)
struct ValueLayoutMatrixTests {
    @Test func finalClass() async throws {
        try await exercise(
            LiveInstance.self,
            make: { LiveInstance($0, in: layoutInstances) },
            check: { (1...6).contains($0.id) }
        )
    }

    @Test func nonFinalClassHoldingASubclassInstance() async throws {
        try await exercise(
            RLBase.self,
            make: { RLDerived($0) },
            check: { $0.kind() == "derived" && (1...6).contains($0.tracked.id) }
        )
    }

    @Test func genericClass() async throws {
        try await exercise(
            RLGeneric<SIMD4<Double>>.self,
            make: { RLGeneric(SIMD4(repeating: Double($0))) },
            check: { (1...6).contains(Int($0.value.w)) && $0.value.x == $0.value.w }
        )
    }

    @Test func optionalOfAClass() async throws {
        try await exercise(
            LiveInstance?.self,
            make: { LiveInstance($0, in: layoutInstances) },
            check: { $0.map { (1...6).contains($0.id) } ?? false }
        )
        try await exercise(LiveInstance?.self, make: { _ in nil }, check: { $0 == nil })
        try await exercise(
            LiveInstance??.self,
            make: { .some(LiveInstance($0, in: layoutInstances)) },
            check: { $0??.id != nil }
        )
    }

    @Test func classBoundExistential() async throws {
        try await exercise((any RLNamed).self, make: { RLPerson($0) }, check: { (1...6).contains($0.tracked.id) })
    }

    @Test func anyObjectExistential() async throws {
        try await exercise(
            (any AnyObject & Sendable).self,
            make: { LiveInstance($0, in: layoutInstances) },
            check: { ($0 as? LiveInstance).map { (1...6).contains($0.id) } ?? false }
        )
    }

    @Test func anySendableHoldingAClass() async throws {
        try await exercise(
            (any Sendable).self,
            make: { LiveInstance($0, in: layoutInstances) },
            check: { ($0 as? LiveInstance).map { (1...6).contains($0.id) } ?? false }
        )
    }

    @Test func nonClassExistentialOutOfLine() async throws {
        try await exercise(
            (any RLPlain).self,
            make: { RLPlainBig(n: $0, tracked: LiveInstance($0, in: layoutInstances)) },
            check: { ($0 as? RLPlainBig).map { $0.pad == SIMD8(repeating: 7) && $0.tracked.id == $0.n } ?? false }
        )
    }

    @Test func overAlignedSIMD() async throws {
        try await exercise(
            SIMD16<Float>.self,
            make: { SIMD16(repeating: Float($0)) },
            check: { v in (1...6).contains(Int(v[0])) && v.min() == v.max() }
        )
        try await exercise(
            SIMD8<Double>.self,
            make: { SIMD8(repeating: Double($0)) },
            check: { v in (1...6).contains(Int(v[0])) && v.min() == v.max() }
        )
    }

    @Test func zeroSizeTypes() async throws {
        try await exercise(RLEmpty.self, make: { _ in RLEmpty() }, check: { _ in true })
        try await exercise(RLZeroAligned.self, make: { _ in RLZeroAligned() }, check: { _ in true })
        try await exercise(Void.self, make: { _ in () }, check: { _ in true })
    }

    @Test func largeStruct() async throws {
        try await exercise(
            RLLarge.self,
            make: { n in
                RLLarge(
                    a: (n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, n),
                    b: (n, n, n, n, n, n, n, n, n, n, n, n, n, n, n, -n),
                    s: String(repeating: "x", count: 100 + n),
                    t: LiveInstance(n, in: layoutInstances),
                    v: SIMD16(repeating: Float(n))
                )
            },
            check: { l in
                l.a.0 == l.t.id && l.a.15 == l.t.id && l.b.15 == -l.t.id && l.s.count == 100 + l.t.id
                    && l.v == SIMD16(repeating: Float(l.t.id))
            }
        )
    }

    @Test func enumsWithPayloads() async throws {
        try await exercise(
            RLPayload.self,
            make: { n in
                n.isMultiple(of: 2)
                    ? .object(LiveInstance(n, in: layoutInstances))
                    : .vector(SIMD4(repeating: Double(n)), LiveInstance(n, in: layoutInstances))
            },
            check: {
                switch $0 {
                case .object(let t): t.id.isMultiple(of: 2)
                case .vector(let v, let t): Int(v.x) == t.id && !t.id.isMultiple(of: 2)
                case .none: false
                }
            }
        )
        try await exercise(RLPayload.self, make: { _ in .none }, check: { if case .none = $0 { true } else { false } })
    }

    // Release builds abort on this shape's asynchronous factory: see
    // `AsyncTransientAlignmentTests.aTupleWithAVectorAndAnObject`.
    #if DEBUG
    @Test func tuples() async throws {
        try await exercise(
            (Int8, SIMD4<Double>, LiveInstance).self,
            make: { (Int8($0), SIMD4(repeating: Double($0)), LiveInstance($0, in: layoutInstances)) },
            check: { Int($0.0) == $0.2.id && Int($0.1.w) == $0.2.id }
        )
    }
    #endif

    @Test func closures() async throws {
        try await exercise(
            (@Sendable () -> Int).self,
            make: { n in
                let t = LiveInstance(n, in: layoutInstances)
                return { t.id }
            },
            check: { (1...6).contains($0()) }
        )
    }

    @Test func metatypes() async throws {
        try await exercise(LiveInstance.Type.self, make: { _ in LiveInstance.self }, check: { $0 == LiveInstance.self })
    }

    /// A chain of 80 synchronous transients of the same value type (past the recursion limit, so the
    /// iterative path makes it), each key a distinct generic type made at run time, read by an
    /// asynchronous factory and a scoped one.
    @Test func deepGenericChainReadFromTheAsynchronousPath() async throws {
        enum Top: ServiceKey { typealias Value = Int }
        enum TopScoped: ServiceKey { typealias Value = SIMD4<Double> }
        func addLinks<K: ServiceKey>(
            _ builder: inout ServiceGraph.Builder,
            after key: K.Type,
            remaining: Int,
            finish: (inout ServiceGraph.Builder, any ServiceKey.Type) -> Void
        ) where K.Value == SIMD4<Double> {
            guard remaining > 0 else { return finish(&builder, key) }
            builder.provide(RLChain<K>.self, lifetime: .transient, dependsOn: K.self) { $0 + 1 }
            addLinks(&builder, after: RLChain<K>.self, remaining: remaining - 1, finish: finish)
        }
        enum Root: ServiceKey { typealias Value = SIMD4<Double> }
        var builder = ServiceGraph.Builder()
        builder.provide(Root.self, lifetime: .transient) { SIMD4(repeating: 0) }
        addLinks(&builder, after: Root.self, remaining: 80) { builder, last in
            func add<L: ServiceKey>(_ last: L.Type) {
                builder.provide(Top.self, lifetime: .transient, dependsOn: L.self) { (v: L.Value) async -> Int in
                    Int((v as! SIMD4<Double>).x)
                }
                builder.provide(TopScoped.self, lifetime: .scoped, dependsOn: L.self) { (v: L.Value) in
                    v as! SIMD4<Double>
                }
            }
            add(last)
        }
        let graph = try await builder.build()
        #expect(try await graph.resolve(Top.self) == 80)
        let scope = try graph.makeScope()
        #expect(try await scope.resolve(TopScoped.self) == SIMD4(repeating: 80))
        try await scope.close()
        try await graph.shutdown()
    }
}
