import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Values

private struct RVUserID: Sendable, Hashable {
    let raw: Int
}

/// A value whose alignment is 16 bytes, with a byte on each side of the wide part.
private struct RVAligned16: Sendable, Equatable {
    var head: UInt8
    var vector: SIMD4<Int32>
    var tail: UInt8
}

private struct RVEmpty: Sendable, Equatable {}

/// A value far larger than any inline buffer.
private struct RVLarge: Sendable, Equatable {
    var words: [Int]
    var a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p: Int
    var label: String

    init(seed: Int) {
        words = Array(seed..<(seed + 5))
        (a, b, c, d, e, f, g, h) = (seed, seed + 1, seed + 2, seed + 3, seed + 4, seed + 5, seed + 6, seed + 7)
        (i, j, k, l, m, n, o, p) = (
            seed + 8, seed + 9, seed + 10, seed + 11, seed + 12, seed + 13, seed + 14, seed + 15
        )
        label = "large #\(seed) — ünïcødé ✓"
    }
}

private protocol RVShape: Sendable {
    var area: Int { get }
}

private struct RVSquare: RVShape {
    let side: Int
    var area: Int { side * side }
}

private final class RVToken: Sendable {
    let id: Int
    init(_ id: Int) { self.id = id }
}

private final class RVProfile: Sendable {
    let id: RVUserID
    let repository: String
    init(id: RVUserID, repository: String) {
        self.id = id
        self.repository = repository
    }
}

/// Holds a provider, as a service that makes another on demand.
private struct RVServer: Sendable {
    let makeHandler: Provider<RVHandlerKey>
}

private struct RVScreens: Sendable {
    let makeProfile: ArgumentFactory<RVProfileKey, RVUserID>.Value
}

// MARK: - Keys

private enum RVAnalyticsKey: ServiceKey { typealias Value = String }
private enum RVPaymentsKey: ServiceKey { typealias Value = Int }
private enum RVCheckoutKey: ServiceKey { typealias Value = String }
private enum RVHandlerKey: ServiceKey { typealias Value = RVToken }
private enum RVServerKey: ServiceKey { typealias Value = RVServer }
private enum RVRepositoryKey: ServiceKey { typealias Value = String }
private enum RVProfileKey: ServiceKey { typealias Value = RVProfile }
private enum RVScreensKey: ServiceKey { typealias Value = RVScreens }
private enum RVScopedKey: ServiceKey { typealias Value = RVToken }
private enum RVSingletonKey: ServiceKey { typealias Value = RVToken }
private enum RVTransientKey: ServiceKey { typealias Value = RVToken }
private enum RVHookedKey: ServiceKey { typealias Value = HookedService }
private enum RVOtherHookedKey: ServiceKey { typealias Value = HookedService }
private enum RVCycleAKey: ServiceKey { typealias Value = Int }
private enum RVCycleBKey: ServiceKey { typealias Value = Int }
private enum RVCycleCKey: ServiceKey { typealias Value = Int }
private enum RVMissingKey: ServiceKey { typealias Value = Int }
private enum RVIntHolderKey: ServiceKey { typealias Value = Int }
private enum RVStringHolderKey: ServiceKey { typealias Value = String }
private enum RVSingletonHolderKey: ServiceKey { typealias Value = Provider<RVSingletonKey> }
private enum RVTransientHolderKey: ServiceKey { typealias Value = Provider<RVTransientKey> }
private enum RVScopedHolderKey: ServiceKey { typealias Value = Provider<RVScopedKey> }
private enum RVOddKey: ServiceKey { typealias Value = String }
private enum RVAlignedKey: ServiceKey { typealias Value = RVAligned16 }
private enum RVLargeKey: ServiceKey { typealias Value = RVLarge }

private enum RVD1: ServiceKey { typealias Value = Int }
private enum RVD2: ServiceKey { typealias Value = Int }
private enum RVD3: ServiceKey { typealias Value = Int }
private enum RVD4: ServiceKey { typealias Value = Int }
private enum RVD5: ServiceKey { typealias Value = Int }
private enum RVD6: ServiceKey { typealias Value = Int }
private enum RVD7: ServiceKey { typealias Value = Int }
private enum RVD8: ServiceKey { typealias Value = Int }
private enum RVAbsent1: ServiceKey { typealias Value = Int }
private enum RVAbsent2: ServiceKey { typealias Value = Int }
private enum RVAbsent3: ServiceKey { typealias Value = Int }
private enum RVAbsent4: ServiceKey { typealias Value = Int }
private enum RVAbsent5: ServiceKey { typealias Value = Int }
private enum RVAbsent6: ServiceKey { typealias Value = Int }
private enum RVAbsent7: ServiceKey { typealias Value = Int }
private enum RVAbsent8: ServiceKey { typealias Value = Int }
private enum RVArityA1: ServiceKey { typealias Value = [Int] }
private enum RVArityA2: ServiceKey { typealias Value = [Int] }
private enum RVArityA3: ServiceKey { typealias Value = [Int] }
private enum RVArityA4: ServiceKey { typealias Value = [Int] }
private enum RVArityA5: ServiceKey { typealias Value = [Int] }
private enum RVArityA6: ServiceKey { typealias Value = [Int] }
private enum RVArityA7: ServiceKey { typealias Value = [Int] }
private enum RVArityA8: ServiceKey { typealias Value = [Int] }
private enum RVArityB1: ServiceKey { typealias Value = [Int] }
private enum RVArityB2: ServiceKey { typealias Value = [Int] }
private enum RVArityB3: ServiceKey { typealias Value = [Int] }
private enum RVArityB4: ServiceKey { typealias Value = [Int] }
private enum RVArityB5: ServiceKey { typealias Value = [Int] }
private enum RVArityB6: ServiceKey { typealias Value = [Int] }
private enum RVArityB7: ServiceKey { typealias Value = [Int] }
private enum RVArityB8: ServiceKey { typealias Value = [Int] }
private enum RVArityC1: ServiceKey { typealias Value = [Int] }
private enum RVArityC2: ServiceKey { typealias Value = [Int] }
private enum RVArityC3: ServiceKey { typealias Value = [Int] }
private enum RVArityC4: ServiceKey { typealias Value = [Int] }
private enum RVArityC5: ServiceKey { typealias Value = [Int] }
private enum RVArityC6: ServiceKey { typealias Value = [Int] }
private enum RVArityC7: ServiceKey { typealias Value = [Int] }
private enum RVArityC8: ServiceKey { typealias Value = [Int] }
private enum RVArityD1: ServiceKey { typealias Value = [Int] }
private enum RVArityD2: ServiceKey { typealias Value = [Int] }
private enum RVArityD3: ServiceKey { typealias Value = [Int] }
private enum RVArityD4: ServiceKey { typealias Value = [Int] }
private enum RVArityD5: ServiceKey { typealias Value = [Int] }
private enum RVArityD6: ServiceKey { typealias Value = [Int] }
private enum RVArityD7: ServiceKey { typealias Value = [Int] }
private enum RVArityD8: ServiceKey { typealias Value = [Int] }

// MARK: - Numbered keys (distinct types made at run time)

/// Key `n` spells `n` in binary, so thousands of distinct keys nest only `rvBits` deep.
private protocol RVNumbered: ServiceKey where Value == Int {}
private enum RVBitRoot: RVNumbered { typealias Value = Int }
private enum RVBit0<Inner: RVNumbered>: RVNumbered { typealias Value = Int }
private enum RVBit1<Inner: RVNumbered>: RVNumbered { typealias Value = Int }

private let rvBits = 15

extension RVNumbered {
    fileprivate static var appendingZero: any RVNumbered.Type { RVBit0<Self>.self }
    fileprivate static var appendingOne: any RVNumbered.Type { RVBit1<Self>.self }
}

private func rvKey(_ number: Int) -> any RVNumbered.Type {
    var key: any RVNumbered.Type = RVBitRoot.self
    for bit in 0..<rvBits {
        key = (number >> bit) & 1 == 0 ? key.appendingZero : key.appendingOne
    }
    return key
}

private enum RVLink {
    case direct, optional, provider
}

/// Provides `key` as `1 + the value of next` through an edge of the given kind.
private func rvLink<Key: RVNumbered, Next: RVNumbered>(
    _ key: Key.Type,
    to next: Next.Type,
    as link: RVLink,
    lifetime: Lifetime,
    async: Bool,
    into builder: inout ServiceGraph.Builder
) {
    switch (link, async) {
    case (.direct, false):
        builder.provide(key, lifetime: lifetime, dependsOn: next) { $0 + 1 }
    case (.direct, true):
        builder.provide(key, lifetime: lifetime, dependsOn: next) { value in
            await Task.yield()
            return value + 1
        }
    case (.optional, false):
        builder.provide(key, lifetime: lifetime, dependsOn: Next?.self) { ($0 ?? -1_000_000) + 1 }
    case (.optional, true):
        builder.provide(key, lifetime: lifetime, dependsOn: Next?.self) { value in
            await Task.yield()
            return (value ?? -1_000_000) + 1
        }
    case (.provider, false):
        builder.provide(key, lifetime: lifetime, dependsOn: Provider<Next>.self) { try $0.resolveSynchronously() + 1 }
    case (.provider, true):
        builder.provide(key, lifetime: lifetime, dependsOn: Provider<Next>.self) { try await $0() + 1 }
    }
}

private func rvLeaf<Key: RVNumbered>(
    _ key: Key.Type,
    value: Int,
    lifetime: Lifetime,
    into builder: inout ServiceGraph.Builder
) {
    builder.provide(key, lifetime: lifetime) { value }
}

/// A leaf that depends optionally on a key nothing provides.
private func rvOptionalLeaf<Key: RVNumbered, Absent: RVNumbered>(
    _ key: Key.Type,
    absent: Absent.Type,
    into builder: inout ServiceGraph.Builder
) {
    builder.provide(key, lifetime: .transient, dependsOn: Absent?.self) { $0 == nil ? 0 : -1_000_000 }
}

private func rvThrowingLeaf<Key: RVNumbered>(_ key: Key.Type, into builder: inout ServiceGraph.Builder) {
    builder.provide(key, lifetime: .transient) { () throws -> Int in throw TestFailure("the bottom failed") }
}

private func rvResolve<Key: RVNumbered>(_ key: Key.Type, in graph: ServiceGraph) async throws -> Int {
    try await graph.resolve(key)
}

private func rvResolveSynchronously<Key: RVNumbered>(_ key: Key.Type, in graph: ServiceGraph) throws -> Int {
    try graph.resolveSynchronously(key)
}

private func rvSubscript<Key: RVNumbered>(_ key: Key.Type, in graph: ServiceGraph) -> Int {
    graph[key]
}

/// The 10,000-service shape: `n` depends directly on `n - 1`, optionally on `n / 2` (provided), through a
/// provider on `n / 3`, and every tenth service optionally on a key nothing provides.
private func rvWide<Key: RVNumbered, Previous: RVNumbered, Half: RVNumbered, Third: RVNumbered>(
    _ key: Key.Type,
    previous: Previous.Type,
    half: Half.Type,
    third: Third.Type,
    into builder: inout ServiceGraph.Builder
) {
    builder.provide(key, dependsOn: previous, Half?.self, Provider<Third>.self) { previous, half, _ in
        1 &+ previous &+ (half ?? -1_000_000)
    }
}

private func rvWideWithAbsent<
    Key: RVNumbered,
    Previous: RVNumbered,
    Half: RVNumbered,
    Third: RVNumbered,
    Absent: RVNumbered
>(
    _ key: Key.Type,
    previous: Previous.Type,
    half: Half.Type,
    third: Third.Type,
    absent: Absent.Type,
    into builder: inout ServiceGraph.Builder
) {
    builder.provide(key, dependsOn: previous, Half?.self, Provider<Third>.self, Absent?.self) {
        previous,
        half,
        _,
        absent in
        1 &+ previous &+ (half ?? -1_000_000) &+ (absent ?? -1_000_000)
    }
}

private func rvChainStart<Key: RVNumbered>(_ key: Key.Type, into builder: inout ServiceGraph.Builder) {
    builder.provide(key) { 1 }
}

private func rvChainNext<Key: RVNumbered, Previous: RVNumbered>(
    _ key: Key.Type,
    previous: Previous.Type,
    into builder: inout ServiceGraph.Builder
) {
    builder.provide(key, dependsOn: previous) { 1 &+ $0 }
}

// MARK: - Helpers

private func rvBuilder() -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.requiresShutdown = false
    return builder
}

private func rvJSON(_ text: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? [String: Any])
}

private func rvServices(_ json: [String: Any]) throws -> [[String: Any]] {
    try #require(json["services"] as? [[String: Any]])
}

private func rvService(_ key: String, in json: [String: Any]) throws -> [String: Any] {
    try #require(try rvServices(json).first { $0["key"] as? String == key }, "no service \(key) in the JSON dump")
}

/// Whether `error` is, or wraps, the test's own failure.
private func rvIsOrWraps(_ error: any Error, _ failure: TestFailure) -> Bool {
    if let own = error as? TestFailure { return own == failure }
    if let graphError = error as? ServiceGraphError {
        return graphError.problems.contains { problem in
            problem.underlyingError.map { rvIsOrWraps($0, failure) } ?? false
        }
    }
    return false
}

private enum RVMaybeKey: ServiceKey { typealias Value = String? }
private enum RVAlignedProductKey: ServiceKey { typealias Value = RVAligned16 }
private enum RVLargeProductKey: ServiceKey { typealias Value = RVLarge }

// MARK: - Tests

@Suite("Runtime values, hostile")
struct RuntimeValueHostileTests {
    // MARK: Optional dependencies

    @Test func anOptionalDependencyIsNilWhereAbsentAndTheValueWhereProvided() async throws {
        var absent = rvBuilder()
        absent.provide(RVPaymentsKey.self) { 7 }
        absent.provide(RVCheckoutKey.self, dependsOn: RVAnalyticsKey?.self, RVPaymentsKey.self) { analytics, payments in
            "\(analytics ?? "nil")/\(payments)"
        }
        var present = absent
        present.provide(RVAnalyticsKey.self) { "tracking" }
        let withoutAnalytics = try await absent.build()
        let withAnalytics = try await present.build()
        #expect(withoutAnalytics[RVCheckoutKey.self] == "nil/7")
        #expect(withAnalytics[RVCheckoutKey.self] == "tracking/7")
        #expect(try await withoutAnalytics.resolve(RVCheckoutKey.self) == "nil/7")
        try await withoutAnalytics.shutdown()
        try await withAnalytics.shutdown()
    }

    @Test func anOptionalDependencyOnAKeyWhoseValueIsOptionalTellsNilFromAbsent() async throws {
        var builder = rvBuilder()
        builder.provide(RVStringHolderKey.self, lifetime: .transient, dependsOn: RVMaybeKey?.self) { value in
            switch value {
            case .none: "absent"
            case .some(.none): "provided nil"
            case .some(.some(let text)): "provided \(text)"
            }
        }
        let withoutProvider = try await builder.build()
        #expect(try withoutProvider.resolveSynchronously(RVStringHolderKey.self) == "absent")
        builder.provide(RVMaybeKey.self) { nil }
        let withNil = try await builder.build()
        #expect(try withNil.resolveSynchronously(RVStringHolderKey.self) == "provided nil")
        try await withoutProvider.shutdown()
        try await withNil.shutdown()
    }

    @Test func optionalAndProviderEdgesInEveryPositionOfEveryArity() async throws {
        var builder = rvBuilder()
        builder.provide(RVD1.self) { 10 }
        builder.provide(RVD2.self) { 20 }
        builder.provide(RVD3.self) { 30 }
        builder.provide(RVD4.self) { 40 }
        builder.provide(RVD5.self) { 50 }
        builder.provide(RVD6.self) { 60 }
        builder.provide(RVD7.self) { 70 }
        builder.provide(RVD8.self) { 80 }
        builder.provide(RVArityA1.self, lifetime: .transient, dependsOn: RVD1?.self) { v1 in
            return [v1 ?? -1]
        }
        builder.provide(RVArityA2.self, lifetime: .transient, dependsOn: Provider<RVD1>.self, RVD2.self) { v1, v2 in
            return [try v1.resolveSynchronously(), v2]
        }
        builder.provide(RVArityA3.self, lifetime: .transient, dependsOn: RVD1.self, RVAbsent2?.self, RVD3?.self) {
            v1,
            v2,
            v3 in
            return [v1, v2 ?? -1, v3 ?? -1]
        }
        builder.provide(
            RVArityA4.self,
            lifetime: .transient,
            dependsOn: RVAbsent1?.self,
            RVD2?.self,
            Provider<RVD3>.self,
            RVD4.self
        ) { v1, v2, v3, v4 in
            return [v1 ?? -1, v2 ?? -1, try v3.resolveSynchronously(), v4]
        }
        builder.provide(
            RVArityA5.self,
            lifetime: .transient,
            dependsOn: RVD1?.self,
            Provider<RVD2>.self,
            RVD3.self,
            RVAbsent4?.self,
            RVD5?.self
        ) { v1, v2, v3, v4, v5 in
            return [v1 ?? -1, try v2.resolveSynchronously(), v3, v4 ?? -1, v5 ?? -1]
        }
        builder.provide(
            RVArityA6.self,
            lifetime: .transient,
            dependsOn: Provider<RVD1>.self,
            RVD2.self,
            RVAbsent3?.self,
            RVD4?.self,
            Provider<RVD5>.self,
            RVD6.self
        ) { v1, v2, v3, v4, v5, v6 in
            return [try v1.resolveSynchronously(), v2, v3 ?? -1, v4 ?? -1, try v5.resolveSynchronously(), v6]
        }
        builder.provide(
            RVArityA7.self,
            lifetime: .transient,
            dependsOn: RVD1.self,
            RVAbsent2?.self,
            RVD3?.self,
            Provider<RVD4>.self,
            RVD5.self,
            RVAbsent6?.self,
            RVD7?.self
        ) { v1, v2, v3, v4, v5, v6, v7 in
            return [v1, v2 ?? -1, v3 ?? -1, try v4.resolveSynchronously(), v5, v6 ?? -1, v7 ?? -1]
        }
        builder.provide(
            RVArityA8.self,
            lifetime: .transient,
            dependsOn: RVAbsent1?.self,
            RVD2?.self,
            Provider<RVD3>.self,
            RVD4.self,
            RVAbsent5?.self,
            RVD6?.self,
            Provider<RVD7>.self,
            RVD8.self
        ) { v1, v2, v3, v4, v5, v6, v7, v8 in
            return [
                v1 ?? -1, v2 ?? -1, try v3.resolveSynchronously(), v4, v5 ?? -1, v6 ?? -1,
                try v7.resolveSynchronously(), v8,
            ]
        }
        builder.provide(RVArityB1.self, lifetime: .transient, dependsOn: Provider<RVD1>.self) { v1 in
            await Task.yield()
            return [try await v1()]
        }
        builder.provide(RVArityB2.self, lifetime: .transient, dependsOn: RVD1.self, RVAbsent2?.self) { v1, v2 in
            await Task.yield()
            return [v1, v2 ?? -1]
        }
        builder.provide(
            RVArityB3.self,
            lifetime: .transient,
            dependsOn: RVAbsent1?.self,
            RVD2?.self,
            Provider<RVD3>.self
        ) { v1, v2, v3 in
            await Task.yield()
            return [v1 ?? -1, v2 ?? -1, try await v3()]
        }
        builder.provide(
            RVArityB4.self,
            lifetime: .transient,
            dependsOn: RVD1?.self,
            Provider<RVD2>.self,
            RVD3.self,
            RVAbsent4?.self
        ) { v1, v2, v3, v4 in
            await Task.yield()
            return [v1 ?? -1, try await v2(), v3, v4 ?? -1]
        }
        builder.provide(
            RVArityB5.self,
            lifetime: .transient,
            dependsOn: Provider<RVD1>.self,
            RVD2.self,
            RVAbsent3?.self,
            RVD4?.self,
            Provider<RVD5>.self
        ) { v1, v2, v3, v4, v5 in
            await Task.yield()
            return [try await v1(), v2, v3 ?? -1, v4 ?? -1, try await v5()]
        }
        builder.provide(
            RVArityB6.self,
            lifetime: .transient,
            dependsOn: RVD1.self,
            RVAbsent2?.self,
            RVD3?.self,
            Provider<RVD4>.self,
            RVD5.self,
            RVAbsent6?.self
        ) { v1, v2, v3, v4, v5, v6 in
            await Task.yield()
            return [v1, v2 ?? -1, v3 ?? -1, try await v4(), v5, v6 ?? -1]
        }
        builder.provide(
            RVArityB7.self,
            lifetime: .transient,
            dependsOn: RVAbsent1?.self,
            RVD2?.self,
            Provider<RVD3>.self,
            RVD4.self,
            RVAbsent5?.self,
            RVD6?.self,
            Provider<RVD7>.self
        ) { v1, v2, v3, v4, v5, v6, v7 in
            await Task.yield()
            return [v1 ?? -1, v2 ?? -1, try await v3(), v4, v5 ?? -1, v6 ?? -1, try await v7()]
        }
        builder.provide(
            RVArityB8.self,
            lifetime: .transient,
            dependsOn: RVD1?.self,
            Provider<RVD2>.self,
            RVD3.self,
            RVAbsent4?.self,
            RVD5?.self,
            Provider<RVD6>.self,
            RVD7.self,
            RVAbsent8?.self
        ) { v1, v2, v3, v4, v5, v6, v7, v8 in
            await Task.yield()
            return [v1 ?? -1, try await v2(), v3, v4 ?? -1, v5 ?? -1, try await v6(), v7, v8 ?? -1]
        }
        builder.provide(RVArityC1.self, lifetime: .scoped, dependsOn: RVD1.self) { v1 in
            return [v1]
        }
        builder.provide(RVArityC2.self, lifetime: .scoped, dependsOn: RVAbsent1?.self, RVD2?.self) { v1, v2 in
            return [v1 ?? -1, v2 ?? -1]
        }
        builder.provide(RVArityC3.self, lifetime: .scoped, dependsOn: RVD1?.self, Provider<RVD2>.self, RVD3.self) {
            v1,
            v2,
            v3 in
            return [v1 ?? -1, try v2.resolveSynchronously(), v3]
        }
        builder.provide(
            RVArityC4.self,
            lifetime: .scoped,
            dependsOn: Provider<RVD1>.self,
            RVD2.self,
            RVAbsent3?.self,
            RVD4?.self
        ) { v1, v2, v3, v4 in
            return [try v1.resolveSynchronously(), v2, v3 ?? -1, v4 ?? -1]
        }
        builder.provide(
            RVArityC5.self,
            lifetime: .scoped,
            dependsOn: RVD1.self,
            RVAbsent2?.self,
            RVD3?.self,
            Provider<RVD4>.self,
            RVD5.self
        ) { v1, v2, v3, v4, v5 in
            return [v1, v2 ?? -1, v3 ?? -1, try v4.resolveSynchronously(), v5]
        }
        builder.provide(
            RVArityC6.self,
            lifetime: .scoped,
            dependsOn: RVAbsent1?.self,
            RVD2?.self,
            Provider<RVD3>.self,
            RVD4.self,
            RVAbsent5?.self,
            RVD6?.self
        ) { v1, v2, v3, v4, v5, v6 in
            return [v1 ?? -1, v2 ?? -1, try v3.resolveSynchronously(), v4, v5 ?? -1, v6 ?? -1]
        }
        builder.provide(
            RVArityC7.self,
            lifetime: .scoped,
            dependsOn: RVD1?.self,
            Provider<RVD2>.self,
            RVD3.self,
            RVAbsent4?.self,
            RVD5?.self,
            Provider<RVD6>.self,
            RVD7.self
        ) { v1, v2, v3, v4, v5, v6, v7 in
            return [v1 ?? -1, try v2.resolveSynchronously(), v3, v4 ?? -1, v5 ?? -1, try v6.resolveSynchronously(), v7]
        }
        builder.provide(
            RVArityC8.self,
            lifetime: .scoped,
            dependsOn: Provider<RVD1>.self,
            RVD2.self,
            RVAbsent3?.self,
            RVD4?.self,
            Provider<RVD5>.self,
            RVD6.self,
            RVAbsent7?.self,
            RVD8?.self
        ) { v1, v2, v3, v4, v5, v6, v7, v8 in
            return [
                try v1.resolveSynchronously(), v2, v3 ?? -1, v4 ?? -1, try v5.resolveSynchronously(), v6, v7 ?? -1,
                v8 ?? -1,
            ]
        }
        builder.provide(RVArityD1.self, lifetime: .scoped, dependsOn: RVAbsent1?.self) { v1 in
            await Task.yield()
            return [v1 ?? -1]
        }
        builder.provide(RVArityD2.self, lifetime: .scoped, dependsOn: RVD1?.self, Provider<RVD2>.self) { v1, v2 in
            await Task.yield()
            return [v1 ?? -1, try await v2()]
        }
        builder.provide(RVArityD3.self, lifetime: .scoped, dependsOn: Provider<RVD1>.self, RVD2.self, RVAbsent3?.self) {
            v1,
            v2,
            v3 in
            await Task.yield()
            return [try await v1(), v2, v3 ?? -1]
        }
        builder.provide(
            RVArityD4.self,
            lifetime: .scoped,
            dependsOn: RVD1.self,
            RVAbsent2?.self,
            RVD3?.self,
            Provider<RVD4>.self
        ) { v1, v2, v3, v4 in
            await Task.yield()
            return [v1, v2 ?? -1, v3 ?? -1, try await v4()]
        }
        builder.provide(
            RVArityD5.self,
            lifetime: .scoped,
            dependsOn: RVAbsent1?.self,
            RVD2?.self,
            Provider<RVD3>.self,
            RVD4.self,
            RVAbsent5?.self
        ) { v1, v2, v3, v4, v5 in
            await Task.yield()
            return [v1 ?? -1, v2 ?? -1, try await v3(), v4, v5 ?? -1]
        }
        builder.provide(
            RVArityD6.self,
            lifetime: .scoped,
            dependsOn: RVD1?.self,
            Provider<RVD2>.self,
            RVD3.self,
            RVAbsent4?.self,
            RVD5?.self,
            Provider<RVD6>.self
        ) { v1, v2, v3, v4, v5, v6 in
            await Task.yield()
            return [v1 ?? -1, try await v2(), v3, v4 ?? -1, v5 ?? -1, try await v6()]
        }
        builder.provide(
            RVArityD7.self,
            lifetime: .scoped,
            dependsOn: Provider<RVD1>.self,
            RVD2.self,
            RVAbsent3?.self,
            RVD4?.self,
            Provider<RVD5>.self,
            RVD6.self,
            RVAbsent7?.self
        ) { v1, v2, v3, v4, v5, v6, v7 in
            await Task.yield()
            return [try await v1(), v2, v3 ?? -1, v4 ?? -1, try await v5(), v6, v7 ?? -1]
        }
        builder.provide(
            RVArityD8.self,
            lifetime: .scoped,
            dependsOn: RVD1.self,
            RVAbsent2?.self,
            RVD3?.self,
            Provider<RVD4>.self,
            RVD5.self,
            RVAbsent6?.self,
            RVD7?.self,
            Provider<RVD8>.self
        ) { v1, v2, v3, v4, v5, v6, v7, v8 in
            await Task.yield()
            return [v1, v2 ?? -1, v3 ?? -1, try await v4(), v5, v6 ?? -1, v7 ?? -1, try await v8()]
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        #expect(try await graph.resolve(RVArityA1.self) == [10])
        #expect(try graph.resolveSynchronously(RVArityA1.self) == [10])
        #expect(try await graph.resolve(RVArityA2.self) == [10, 20])
        #expect(try graph.resolveSynchronously(RVArityA2.self) == [10, 20])
        #expect(try await graph.resolve(RVArityA3.self) == [10, -1, 30])
        #expect(try graph.resolveSynchronously(RVArityA3.self) == [10, -1, 30])
        #expect(try await graph.resolve(RVArityA4.self) == [-1, 20, 30, 40])
        #expect(try graph.resolveSynchronously(RVArityA4.self) == [-1, 20, 30, 40])
        #expect(try await graph.resolve(RVArityA5.self) == [10, 20, 30, -1, 50])
        #expect(try graph.resolveSynchronously(RVArityA5.self) == [10, 20, 30, -1, 50])
        #expect(try await graph.resolve(RVArityA6.self) == [10, 20, -1, 40, 50, 60])
        #expect(try graph.resolveSynchronously(RVArityA6.self) == [10, 20, -1, 40, 50, 60])
        #expect(try await graph.resolve(RVArityA7.self) == [10, -1, 30, 40, 50, -1, 70])
        #expect(try graph.resolveSynchronously(RVArityA7.self) == [10, -1, 30, 40, 50, -1, 70])
        #expect(try await graph.resolve(RVArityA8.self) == [-1, 20, 30, 40, -1, 60, 70, 80])
        #expect(try graph.resolveSynchronously(RVArityA8.self) == [-1, 20, 30, 40, -1, 60, 70, 80])
        #expect(try await graph.resolve(RVArityB1.self) == [10])
        #expect(try await graph.resolve(RVArityB2.self) == [10, -1])
        #expect(try await graph.resolve(RVArityB3.self) == [-1, 20, 30])
        #expect(try await graph.resolve(RVArityB4.self) == [10, 20, 30, -1])
        #expect(try await graph.resolve(RVArityB5.self) == [10, 20, -1, 40, 50])
        #expect(try await graph.resolve(RVArityB6.self) == [10, -1, 30, 40, 50, -1])
        #expect(try await graph.resolve(RVArityB7.self) == [-1, 20, 30, 40, -1, 60, 70])
        #expect(try await graph.resolve(RVArityB8.self) == [10, 20, 30, -1, 50, 60, 70, -1])
        #expect(try await scope.resolve(RVArityC1.self) == [10])
        #expect(try await scope.resolve(RVArityC2.self) == [-1, 20])
        #expect(try await scope.resolve(RVArityC3.self) == [10, 20, 30])
        #expect(try await scope.resolve(RVArityC4.self) == [10, 20, -1, 40])
        #expect(try await scope.resolve(RVArityC5.self) == [10, -1, 30, 40, 50])
        #expect(try await scope.resolve(RVArityC6.self) == [-1, 20, 30, 40, -1, 60])
        #expect(try await scope.resolve(RVArityC7.self) == [10, 20, 30, -1, 50, 60, 70])
        #expect(try await scope.resolve(RVArityC8.self) == [10, 20, -1, 40, 50, 60, -1, 80])
        #expect(try await scope.resolve(RVArityD1.self) == [-1])
        #expect(try await scope.resolve(RVArityD2.self) == [10, 20])
        #expect(try await scope.resolve(RVArityD3.self) == [10, 20, -1])
        #expect(try await scope.resolve(RVArityD4.self) == [10, -1, 30, 40])
        #expect(try await scope.resolve(RVArityD5.self) == [-1, 20, 30, 40, -1])
        #expect(try await scope.resolve(RVArityD6.self) == [10, 20, 30, -1, 50, 60])
        #expect(try await scope.resolve(RVArityD7.self) == [10, 20, -1, 40, 50, 60, -1])
        #expect(try await scope.resolve(RVArityD8.self) == [10, -1, 30, 40, 50, -1, 70, 80])
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aDependencyListedAsDirectOptionalAndProviderAtOnceGetsAllThree() async throws {
        var builder = rvBuilder()
        let made = Tally()
        builder.provide(RVD1.self, lifetime: .transient) { 10 + made.increment() }
        builder.provide(
            RVIntHolderKey.self,
            lifetime: .transient,
            dependsOn: RVD1.self,
            RVD1?.self,
            Provider<RVD1>.self
        ) {
            direct,
            optional,
            provider in
            direct * 1_000_000 + (optional ?? 0) * 1_000 + (try provider.resolveSynchronously())
        }
        let graph = try await builder.build()
        let value = try graph.resolveSynchronously(RVIntHolderKey.self)
        #expect(made.count == 3, "two transients are made with the holder and one by the provider's call")
        #expect(Set([value / 1_000_000, value / 1_000 % 1_000, value % 1_000]) == [11, 12, 13])
        try await graph.shutdown()
    }

    @Test func aCycleThroughAnOptionalEdgeIsReported() throws {
        var builder = rvBuilder()
        builder.provide(RVCycleAKey.self, dependsOn: RVCycleBKey?.self) { ($0 ?? 0) + 1 }
        builder.provide(RVCycleBKey.self, dependsOn: RVCycleCKey.self) { $0 + 1 }
        builder.provide(RVCycleCKey.self, dependsOn: RVCycleAKey.self) { $0 + 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        let problem = try #require(error.problems.first)
        for name in ["RVCycleAKey", "RVCycleBKey", "RVCycleCKey"] {
            #expect(problem.path.contains { $0.hasPrefix(name) }, "the path names \(name): \(problem.path)")
        }
        #expect(problem.path.count == 4)
        #expect(problem.path.first == problem.path.last)
        #expect(problem.site != nil)
        #expect(!problem.message.contains("(through a provider)"), "no provider on this cycle: \(problem.message)")
    }

    @Test func aSingletonHoldingAScopedOrTransientServiceThroughAnOptionalEdgeIsCaptive() throws {
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(1) }
        builder.provide(RVTransientKey.self, lifetime: .transient) { RVToken(2) }
        builder.provide(RVSingletonKey.self, dependsOn: RVScopedKey?.self, line: 9001) { RVToken($0?.id ?? 0) }
        builder.provide(RVIntHolderKey.self, dependsOn: RVTransientKey?.self, line: 9002) { $0?.id ?? 0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency, .captiveDependency])
        let scoped = try #require(error.problems.first { $0.site?.line == 9001 })
        #expect(scoped.key == "RVSingletonKey")
        #expect(scoped.path.contains { $0.hasPrefix("RVScopedKey") })
        let transient = try #require(error.problems.first { $0.site?.line == 9002 })
        #expect(transient.path.contains { $0.hasPrefix("RVTransientKey") })
    }

    @Test func anAbsentScopedOptionalIsNoCaptiveAndGivesNil() async throws {
        var builder = rvBuilder()
        builder.provide(RVSingletonKey.self, dependsOn: RVScopedKey?.self) { RVToken($0?.id ?? -1) }
        let graph = try await builder.build()
        #expect(graph[RVSingletonKey.self].id == -1)
        try await graph.shutdown()
    }

    @Test func theBuildMakesAnOptionalDependencyFirstAndReleasesItLast() async throws {
        let log = EventLog()
        var builder = rvBuilder()
        builder.provide(RVHookedKey.self, dependsOn: RVOtherHookedKey?.self) { other in
            HookedService("A after \(other?.name ?? "nothing")", log: log)
        }
        builder.provide(RVOtherHookedKey.self) { () async throws -> HookedService in
            try await Task.sleep(for: .milliseconds(20))
            return HookedService("B", log: log)
        }
        let graph = try await builder.build()
        #expect(graph[RVHookedKey.self].name == "A after B")
        let didAddB = try #require(log.index(of: "didAdd B"))
        let initA = try #require(log.index(of: "init A after B"))
        #expect(didAddB < initA, "\(log.all)")
        #expect(
            graph.initializationOrder.firstIndex(of: "RVOtherHookedKey")! < graph.initializationOrder.firstIndex(
                of: "RVHookedKey"
            )!
        )
        try await graph.shutdown()
        let removeA = try #require(log.index(of: "willRemove A after B"))
        let removeB = try #require(log.index(of: "willRemove B"))
        #expect(removeA < removeB, "the dependent goes first: \(log.all)")
    }

    @Test func providingAnOptionalKeyItselfIsAnInvalidKey() async throws {
        var builder = rvBuilder()
        builder.provide(RVAnalyticsKey?.self) { "tracking" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.contains(.invalidKey), "\(error)")
        let built = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        #expect(built?.contains(.invalidKey) == true)
    }

    @Test func overridingAnOptionalKeyIsRefused() throws {
        var builder = rvBuilder()
        builder.provide(RVAnalyticsKey.self) { "real" }
        builder.override(RVAnalyticsKey?.self) { "double" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        // The docs name `.invalidKey` for providing an optional key; an override of one is reported as an
        // override of a key never provided, which is refused all the same.
        #expect(error.contains(.invalidKey) || error.codes == [.overrideOfUnknownKey], "\(error)")
        #expect(error.problems.map(\.key) == ["RVAnalyticsKey?"])
    }

    @Test func anOptionalOfAnOptionalKeyIsNotAPlainKey() async throws {
        var builder = rvBuilder()
        builder.provide(RVAnalyticsKey.self) { "tracking" }
        builder.provide(RVCheckoutKey.self, dependsOn: RVAnalyticsKey??.self) { value in
            value.map { $0 ?? "inner nil" } ?? "outer nil"
        }
        let error = #expect(throws: ServiceGraphError.self, "only a plain key can be optional") {
            try builder.validate()
        }
        #expect(error?.contains(.invalidKey) ?? false, "\(String(describing: error))")
        if error == nil {
            // Accepted: then the factory must at least see the provided value, not a silent nil.
            let graph = try await builder.build()
            #expect(graph[RVCheckoutKey.self] == "tracking")
            try await graph.shutdown()
        }
    }

    @Test func aChildGraphThatProvidesTheKeyGivesItsOwnServicesTheValue() async throws {
        var parent = rvBuilder()
        parent.provide(RVCheckoutKey.self, dependsOn: RVAnalyticsKey?.self) { "parent sees \($0 ?? "nil")" }
        let parentGraph = try await parent.build()
        var child = parentGraph.makeChildBuilder()
        child.requiresShutdown = false
        child.provide(RVAnalyticsKey.self) { "child analytics" }
        child.provide(RVStringHolderKey.self, dependsOn: RVAnalyticsKey?.self, RVCheckoutKey.self) {
            "\($0 ?? "nil") + \($1)"
        }
        child.provide(RVOddKey.self, lifetime: .transient, dependsOn: Provider<RVAnalyticsKey>.self) {
            try "provided: \($0.resolveSynchronously())"
        }
        let childGraph = try await child.build()
        #expect(childGraph[RVStringHolderKey.self] == "child analytics + parent sees nil")
        #expect(try childGraph.resolveSynchronously(RVOddKey.self) == "provided: child analytics")
        #expect(parentGraph[RVCheckoutKey.self] == "parent sees nil", "the parent's singleton keeps its nil")
        #expect(parent.lint().contains { $0.code == .absentOptionalDependency })
        try await childGraph.shutdown()
        try await parentGraph.shutdown()
    }

    @Test func aChildGraphOverridingTheOptionalTargetGivesItsOwnServicesTheOverride() async throws {
        var parent = rvBuilder()
        parent.provide(RVAnalyticsKey.self) { "parent analytics" }
        parent.provide(RVCheckoutKey.self, dependsOn: RVAnalyticsKey?.self) { "parent sees \($0 ?? "nil")" }
        let parentGraph = try await parent.build()
        var child = parentGraph.makeChildBuilder()
        child.requiresShutdown = false
        child.override(RVAnalyticsKey.self) { "child double" }
        child.provide(RVStringHolderKey.self, lifetime: .transient, dependsOn: RVAnalyticsKey?.self) { $0 ?? "nil" }
        let childGraph = try await child.build()
        #expect(try await childGraph.resolve(RVStringHolderKey.self) == "child double")
        #expect(parentGraph[RVCheckoutKey.self] == "parent sees parent analytics")
        try await childGraph.shutdown()
        try await parentGraph.shutdown()
    }

    @Test func anOverrideOfTheOptionalTargetReachesTheDependent() async throws {
        var builder = rvBuilder()
        builder.provide(RVAnalyticsKey.self) { "real" }
        builder.provide(RVCheckoutKey.self, dependsOn: RVAnalyticsKey?.self) { $0 ?? "nil" }
        var test = builder
        test.override(RVAnalyticsKey.self) { "double" }
        let graph = try await test.build()
        #expect(graph[RVCheckoutKey.self] == "double")
        try await graph.shutdown()

        var unknown = rvBuilder()
        unknown.provide(RVCheckoutKey.self, dependsOn: RVAnalyticsKey?.self) { $0 ?? "nil" }
        unknown.override(RVAnalyticsKey.self) { "double" }
        let error = try #require(throws: ServiceGraphError.self) { try unknown.validate() }
        #expect(error.codes == [.overrideOfUnknownKey], "an optional edge does not make a key known")
    }

    @Test func lintListsAnAbsentOptionalDependencyAndCountsOptionalAndProviderEdgesAsUse() throws {
        var builder = rvBuilder()
        builder.provide(RVPaymentsKey.self) { 1 }
        builder.provide(RVHandlerKey.self, lifetime: .transient) { RVToken(0) }
        builder.provide(RVRepositoryKey.self) { "repo" }
        builder.provide(
            RVCheckoutKey.self,
            dependsOn: RVAnalyticsKey?.self,
            RVPaymentsKey?.self,
            Provider<RVHandlerKey>.self,
            RVRepositoryKey.self,
            line: 4242
        ) { _, _, _, repository in repository }
        builder.declareEntryPoints(RVCheckoutKey.self)
        let warnings = builder.lint()
        let absent = warnings.filter { $0.code == .absentOptionalDependency }
        #expect(absent.count == 1, "\(warnings)")
        let warning = try #require(absent.first)
        #expect(warning.message.contains("RVAnalyticsKey"), "\(warning.message)")
        #expect(warning.site.line == 4242)
        #expect(!warnings.contains { $0.code == .unusedProvider }, "optional and provider edges are uses: \(warnings)")

        builder.provide(RVAnalyticsKey.self) { "now provided" }
        #expect(!builder.lint().contains { $0.code == .absentOptionalDependency })
    }

    @Test func aSynchronousTransientWithAPresentAsyncOptionalRequiresAwait() async throws {
        var builder = rvBuilder()
        builder.provide(RVStringHolderKey.self, lifetime: .transient, dependsOn: RVTransientKey?.self) {
            "\($0?.id ?? -1)"
        }
        let absentGraph = try await builder.build()
        #expect(try absentGraph.resolveSynchronously(RVStringHolderKey.self) == "-1")
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(5)
        }
        let graph = try await builder.build()
        let error = #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(RVStringHolderKey.self) }
        #expect(error?.codes == [.requiresAwait])
        #expect(try await graph.resolve(RVStringHolderKey.self) == "5")
        try await absentGraph.shutdown()
        try await graph.shutdown()
    }

    @Test func anOptionalEdgeToAScopedServiceReadsTheScopesInstance() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(made.increment()) }
        builder.provide(RVTransientKey.self, lifetime: .transient, dependsOn: RVScopedKey?.self) {
            RVToken($0?.id ?? -1)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let scoped = try await scope.resolve(RVScopedKey.self)
        #expect(try await scope.resolve(RVTransientKey.self).id == scoped.id)
        // A transient over a scoped service (not a seed) needs `await`, even once the instance exists.
        let synchronous = #expect(throws: ServiceGraphError.self) {
            try scope.resolveSynchronously(RVTransientKey.self)
        }
        #expect(synchronous?.codes == [.requiresAwait])
        #expect(made.count == 1)
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(RVTransientKey.self) }
        #expect(error?.codes == [.wrongLifetime], "a present scoped dependency keeps the graph from resolving it")
        try await scope.close()
        try await graph.shutdown()
    }

    // MARK: Providers

    @Test func aSingletonsProviderOfATransientMakesANewOneOnEachCall() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { RVToken(made.increment()) }
        builder.provide(RVTransientHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { $0 }
        let graph = try await builder.build()
        #expect(made.count == 0, "nothing is made with the holder")
        let provider = graph[RVTransientHolderKey.self]
        let first = try await provider()
        let second = try provider.resolveSynchronously()
        let third = try await provider()
        #expect(first !== second && second !== third && first !== third)
        #expect([first.id, second.id, third.id] == [1, 2, 3] as [Int])
        try await graph.shutdown()
    }

    @Test func aThousandConcurrentCallsOfATransientProviderMakeAThousandInstances() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(made.increment())
        }
        builder.provide(RVTransientHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { $0 }
        let graph = try await builder.build()
        let provider = graph[RVTransientHolderKey.self]
        let ids = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<1_000 { group.addTask { try await provider().id } }
            var ids: Set<Int> = []
            for try await id in group { ids.insert(id) }
            return ids
        }
        #expect(ids.count == 1_000)
        #expect(ids == Set(1...1_000))
        #expect(made.count == 1_000)
        try await graph.shutdown()
    }

    @Test func aThousandConcurrentCallsOfASingletonProviderGiveTheSingleton() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVSingletonKey.self) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(made.increment())
        }
        builder.provide(RVSingletonHolderKey.self, lifetime: .transient, dependsOn: Provider<RVSingletonKey>.self) {
            $0
        }
        let graph = try await builder.build()
        let singleton = graph[RVSingletonKey.self]
        let same = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    let provider = try await graph.resolve(RVSingletonHolderKey.self)
                    let value = index.isMultiple(of: 2) ? try await provider() : try provider.resolveSynchronously()
                    return value === singleton
                }
            }
            var all = true
            for try await one in group { all = all && one }
            return all
        }
        #expect(same)
        #expect(made.count == 1)
        try await graph.shutdown()
    }

    @Test func aSingletonsProviderOfAScopedServiceIsCaptive() throws {
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(1) }
        builder.provide(RVScopedHolderKey.self, dependsOn: Provider<RVScopedKey>.self, line: 5150) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
        let problem = try #require(error.problems.first)
        #expect(problem.key == "RVScopedHolderKey")
        #expect(problem.site?.line == 5150)
        #expect(problem.path.contains { $0.hasPrefix("RVScopedKey") }, "\(problem.path)")
    }

    @Test func aProviderMadeInAScopeResolvesInThatScopeOnceUnderAThousandCallers() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { () async throws -> RVToken in
            try await Task.sleep(for: .milliseconds(5))
            return RVToken(made.increment())
        }
        builder.provide(RVScopedHolderKey.self, lifetime: .scoped, dependsOn: Provider<RVScopedKey>.self) { $0 }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let provider = try await scope.resolve(RVScopedHolderKey.self)
        let ids = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<1_000 { group.addTask { try await provider().id } }
            var ids: Set<Int> = []
            for try await id in group { ids.insert(id) }
            return ids
        }
        #expect(ids.count == 1, "one scoped instance: \(ids)")
        #expect(made.count == 1)
        #expect(try await scope.resolve(RVScopedKey.self).id == ids.first)
        let synchronous = #expect(throws: ServiceGraphError.self) { try provider.resolveSynchronously() }
        #expect(synchronous?.codes == [.requiresAwait], "a scoped service that is not a seed needs await")

        let other = try graph.makeScope()
        let otherProvider = try await other.resolve(RVScopedHolderKey.self)
        #expect(try await otherProvider().id == 2)

        try await scope.close()
        let closed = await #expect(throws: ServiceGraphError.self) { try await provider() }
        #expect(closed?.codes == [.scopeClosed])
        let closedSynchronously = #expect(throws: ServiceGraphError.self) { try provider.resolveSynchronously() }
        #expect(closedSynchronously?.codes == [.scopeClosed])
        #expect(try await otherProvider().id == 2, "the other scope is untouched")
        try await graph.shutdown()
        let shut = await #expect(throws: ServiceGraphError.self) { try await otherProvider() }
        #expect(shut?.codes == [.scopeClosed], "shutdown closes the open scope first")
    }

    @Test func aProviderOutlivingItsReleasedScopeThrowsScopeClosed() async throws {
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(1) }
        builder.provide(RVScopedHolderKey.self, lifetime: .transient, dependsOn: Provider<RVScopedKey>.self) { $0 }
        let graph = try await builder.build()
        let scopes = WeakRegistry()
        var provider: Provider<RVScopedKey>?
        do {
            let scope = scopes.track(try graph.makeScope())
            provider = try scope.resolveSynchronously(RVScopedHolderKey.self)
            #expect(try await provider?().id == 1)
        }
        #expect(scopes.alive == 0, "the provider does not keep its scope alive")
        let held = try #require(provider)
        let error = await #expect(throws: ServiceGraphError.self) { try await held() }
        #expect(error?.codes == [.scopeClosed])
        let synchronous = #expect(throws: ServiceGraphError.self) { try held.resolveSynchronously() }
        #expect(synchronous?.codes == [.scopeClosed])
        try await graph.shutdown()
    }

    @Test func callsRacingTheScopesCloseEitherSucceedOrThrowScopeClosed() async throws {
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(1)
        }
        builder.provide(RVScopedHolderKey.self, lifetime: .scoped, dependsOn: Provider<RVScopedKey>.self) { $0 }
        builder.provide(RVScopedKey.self, lifetime: .scoped, dependsOn: Provider<RVTransientKey>.self) { _ in RVToken(7)
        }
        builder.provide(RVTransientHolderKey.self, lifetime: .scoped, dependsOn: Provider<RVTransientKey>.self) { $0 }
        let graph = try await builder.build()
        for _ in 0..<20 {
            let scope = try graph.makeScope()
            let provider = try await scope.resolve(RVTransientHolderKey.self)
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        if index == 50 {
                            try await scope.close()
                            return "closed"
                        }
                        do {
                            return try await provider().id == 1 ? "made" : "wrong value"
                        } catch let error as ServiceGraphError where error.codes == [.scopeClosed] {
                            return "refused"
                        }
                    }
                }
                var outcomes: [String: Int] = [:]
                for try await outcome in group { outcomes[outcome, default: 0] += 1 }
                return outcomes
            }
            #expect(outcomes["closed"] == 1)
            #expect(outcomes["wrong value"] == nil)
            #expect(outcomes["made", default: 0] + outcomes["refused", default: 0] == 99)
            let after = await #expect(throws: ServiceGraphError.self) { try await provider() }
            #expect(after?.codes == [.scopeClosed])
        }
        try await graph.shutdown()
    }

    @Test func aProviderCalledAfterShutdownThrowsGraphShutDown() async throws {
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { RVToken(1) }
        builder.provide(RVTransientHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { $0 }
        let graph = try await builder.build()
        let provider = graph[RVTransientHolderKey.self]
        #expect(try await provider().id == 1)
        try await graph.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) { try await provider() }
        #expect(error?.codes == [.graphShutDown])
        let synchronous = #expect(throws: ServiceGraphError.self) { try provider.resolveSynchronously() }
        #expect(synchronous?.codes == [.graphShutDown])
    }

    @Test func aSingletonHoldingAProviderDoesNotKeepItsGraphAlive() async throws {
        let log = EventLog()
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { RVToken(1) }
        builder.provide(RVTransientHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { $0 }
        builder.eventHandler = { event in log.record("\(event.kind)") }
        let graphs = WeakRegistry()
        var provider: Provider<RVTransientKey>?
        do {
            let graph = graphs.track(try await builder.build())
            provider = graph[RVTransientHolderKey.self]
            #expect(try await provider?().id == 1)
        }
        #expect(graphs.alive == 0, "the singleton's provider must not keep the graph alive")
        let held = try #require(provider)
        let error = await #expect(throws: ServiceGraphError.self) { try await held() }
        #expect(error?.codes == [.graphShutDown])
        let synchronous = #expect(throws: ServiceGraphError.self) { try held.resolveSynchronously() }
        #expect(synchronous?.codes == [.graphShutDown])
    }

    @Test func aCycleThroughAProviderIsReportedAndMarked() throws {
        var builder = rvBuilder()
        builder.provide(RVCycleAKey.self, dependsOn: Provider<RVCycleBKey>.self) { _ in 1 }
        builder.provide(RVCycleBKey.self, dependsOn: RVCycleAKey.self) { $0 + 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        let problem = try #require(error.problems.first)
        #expect(problem.message.contains("(through a provider)"), "\(problem.message)")
        #expect(problem.path.count == 3, "\(problem.path)")
        #expect("\(error)".contains("(through a provider)"))
    }

    @Test func aServiceHoldingAProviderOfItselfIsACycle() throws {
        var builder = rvBuilder()
        builder.provide(RVCycleAKey.self, lifetime: .transient, dependsOn: Provider<RVCycleAKey>.self) { _ in 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        #expect(error.problems.first?.message.contains("(through a provider)") == true, "\(error)")
    }

    @Test func aCycleMadeOnlyOfProvidersIsStillReported() throws {
        var builder = rvBuilder()
        builder.provide(RVCycleAKey.self, lifetime: .transient, dependsOn: Provider<RVCycleBKey>.self) { _ in 1 }
        builder.provide(RVCycleBKey.self, lifetime: .transient, dependsOn: Provider<RVCycleCKey>.self) { _ in 2 }
        builder.provide(RVCycleCKey.self, lifetime: .transient, dependsOn: Provider<RVCycleAKey>.self) { _ in 3 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        let problem = try #require(error.problems.first)
        #expect(problem.path.count == 4, "\(problem.path)")
        #expect(problem.message.contains("(through a provider)"))
    }

    @Test func aProviderCalledFromASingletonsFactoryDuringTheBuildResolves() async throws {
        var builder = rvBuilder()
        builder.provide(RVSingletonKey.self) { () async throws -> RVToken in
            try await Task.sleep(for: .milliseconds(50))
            return RVToken(41)
        }
        builder.provide(RVTransientKey.self, lifetime: .transient, dependsOn: RVSingletonKey.self) {
            RVToken($0.id + 1)
        }
        builder.provide(RVIntHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { provider in
            try await provider().id
        }
        let frozen = builder
        let graph = try await withDeadline(.seconds(30)) { try await frozen.build() }
        #expect(graph[RVIntHolderKey.self] == 42)
        try await graph.shutdown()
    }

    @Test(arguments: [false, true])
    func aProviderOfASingletonCalledDuringTheBuildGivesTheSingleton(asyncTarget: Bool) async throws {
        var builder = rvBuilder()
        if asyncTarget {
            builder.provide(RVSingletonKey.self) { () async throws -> RVToken in
                await Task.yield()
                return RVToken(41)
            }
        } else {
            builder.provide(RVSingletonKey.self) { RVToken(41) }
        }
        builder.provide(RVIntHolderKey.self, dependsOn: Provider<RVSingletonKey>.self) { provider in
            try await provider().id + 1
        }
        let frozen = builder
        let graph = try await withDeadline(.seconds(30)) { try await frozen.build() }
        #expect(graph[RVIntHolderKey.self] == 42)
        #expect(graph.initializationOrder.count == 2, "one instance of the singleton: \(graph.initializationOrder)")
        try await graph.shutdown()
    }

    @Test func aProviderOfAFreeStandingTransientCalledDuringTheBuildResolves() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(made.increment())
        }
        builder.provide(RVIntHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { provider in
            let first = try await provider().id
            let second = try await provider().id
            return first * 10 + second
        }
        let frozen = builder
        let graph = try await withDeadline(.seconds(30)) { try await frozen.build() }
        #expect(graph[RVIntHolderKey.self] == 12)
        try await graph.shutdown()
    }

    @Test func aBrokenGraphsDumpMarksAProviderCycleAsTheRootCause() throws {
        var builder = rvBuilder()
        builder.provide(RVCycleAKey.self, dependsOn: Provider<RVCycleBKey>.self) { _ in 1 }
        builder.provide(RVCycleBKey.self, dependsOn: RVCycleAKey?.self) { _ in 2 }
        builder.provide(RVCycleCKey.self, dependsOn: RVCycleBKey.self) { $0 }
        let json = try rvJSON(builder.dump(.json))
        #expect(try rvService("RVCycleAKey", in: json)["mark"] as? String == "rootCause")
        #expect(try rvService("RVCycleBKey", in: json)["mark"] as? String == "rootCause")
        #expect(try rvService("RVCycleCKey", in: json)["mark"] as? String == "affected")
        #expect(try rvService("RVCycleAKey", in: json)["dependencyKinds"] as? [String] == ["provider"])
        let problems = try #require(json["problems"] as? [[String: Any]])
        #expect(problems.map { $0["code"] as? String } == ["cycle"])
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        let fromError = try #require(error.dump(.text))
        #expect(fromError.contains("(provider)") && fromError.contains("(optional)"), "\(fromError)")
    }

    @Test func aTransientArgumentFactoryOverAnAsyncDependencyRequiresAwait() async throws {
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(3)
        }
        builder.provide(RVOddKey.self, lifetime: .transient, arguments: Int.self, dependsOn: RVTransientKey.self) {
            number,
            token in "\(number * token.id)"
        }
        let graph = try await builder.build()
        let error = #expect(throws: ServiceGraphError.self) {
            try graph.resolveSynchronously(ArgumentFactory<RVOddKey, Int>.self)
        }
        #expect(error?.codes == [.requiresAwait])
        #expect(try await graph.resolve(ArgumentFactory<RVOddKey, Int>.self)(5) == "15")
        try await graph.shutdown()
    }

    @Test func aProviderOfAThrowingAsyncTransientThrowsAsResolveDoesAndRecovers() async throws {
        let attempts = Tally()
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            let attempt = attempts.increment()
            await Task.yield()
            if attempt % 2 == 1 { throw TestFailure("odd attempt") }
            return RVToken(attempt)
        }
        builder.provide(RVTransientHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { $0 }
        let graph = try await builder.build()
        #expect(attempts.count == 0)
        let provider = graph[RVTransientHolderKey.self]
        let viaProvider = try #require(await #expect(throws: (any Error).self) { try await provider() })
        #expect(rvIsOrWraps(viaProvider, TestFailure("odd attempt")), "\(viaProvider)")
        #expect(try await provider().id == 2)
        let viaGraph = try #require(
            await #expect(throws: (any Error).self) { try await graph.resolve(RVTransientKey.self) }
        )
        #expect(type(of: viaProvider) == type(of: viaGraph), "a provider throws as resolve does")
        #expect((viaProvider as? ServiceGraphError)?.codes == (viaGraph as? ServiceGraphError)?.codes)
        let synchronous = #expect(throws: ServiceGraphError.self) { try provider.resolveSynchronously() }
        #expect(synchronous?.codes == [.requiresAwait])
        #expect(attempts.count == 3, "resolveSynchronously refused before running the factory")
        try await graph.shutdown()
    }

    @Test func aSynchronousHolderOfAnAsyncProviderResolvesSynchronously() async throws {
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { () async throws -> RVToken in
            await Task.yield()
            return RVToken(1)
        }
        builder.provide(RVTransientHolderKey.self, lifetime: .transient, dependsOn: Provider<RVTransientKey>.self) {
            $0
        }
        let graph = try await builder.build()
        let holder = try graph.resolveSynchronously(RVTransientHolderKey.self)
        #expect(try await holder().id == 1)
        let error = #expect(throws: ServiceGraphError.self) { try holder.resolveSynchronously() }
        #expect(error?.codes == [.requiresAwait])
        try await graph.shutdown()
    }

    @Test func aProviderOfAMissingKeyIsAMissingProviderWithPathAndSite() throws {
        var builder = rvBuilder()
        builder.provide(RVServerKey.self, dependsOn: RVIntHolderKey.self) { _ in
            RVServer(makeHandler: try Self.unreachable())
        }
        builder.provide(RVIntHolderKey.self, dependsOn: Provider<RVMissingKey>.self, line: 777) { _ in 0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        let problem = try #require(error.problems.first)
        #expect(problem.key == "RVMissingKey")
        #expect(problem.path == ["RVServerKey", "RVIntHolderKey", "RVMissingKey"], "\(problem.path)")
        #expect(problem.site?.line == 777)
        #expect(problem.message.contains("RVIntHolderKey"))
    }

    private static func unreachable<T>() throws -> T { throw TestFailure("never called") }

    @Test func aProviderResolvesInTheGraphItWasMadeInNotInAChildThatOverridesTheKey() async throws {
        var parent = rvBuilder()
        parent.provide(RVTransientKey.self, lifetime: .transient) { RVToken(1) }
        parent.provide(RVTransientHolderKey.self, dependsOn: Provider<RVTransientKey>.self) { $0 }
        let parentGraph = try await parent.build()
        var child = parentGraph.makeChildBuilder()
        child.requiresShutdown = false
        child.override(RVTransientKey.self) { RVToken(2) }
        child.provide(RVServerKey.self, dependsOn: Provider<RVHandlerKey>.self) { RVServer(makeHandler: $0) }
        child.provide(RVHandlerKey.self, lifetime: .transient, dependsOn: Provider<RVTransientKey>.self) {
            RVToken(try $0.resolveSynchronously().id * 10)
        }
        let childGraph = try await child.build()
        #expect(try await parentGraph[RVTransientHolderKey.self]().id == 1)
        #expect(try await childGraph.resolve(RVTransientHolderKey.self)().id == 1, "the parent's singleton's provider")
        #expect(
            try await childGraph[RVServerKey.self].makeHandler().id == 20,
            "the child's own provider sees its override"
        )

        let server = childGraph[RVServerKey.self]
        try await childGraph.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) { try await server.makeHandler() }
        #expect(error?.codes == [.graphShutDown])
        #expect(
            try await parentGraph[RVTransientHolderKey.self]().id == 1,
            "a child's shutdown leaves its parent running"
        )
        try await parentGraph.shutdown()
    }

    @Test func aParentsShutdownEndsAChildsProviders() async throws {
        var parent = rvBuilder()
        parent.provide(RVPaymentsKey.self) { 3 }
        let parentGraph = try await parent.build()
        var child = parentGraph.makeChildBuilder()
        child.requiresShutdown = false
        child.provide(RVHandlerKey.self, lifetime: .transient, dependsOn: RVPaymentsKey.self) { RVToken($0) }
        child.provide(RVServerKey.self, dependsOn: Provider<RVHandlerKey>.self) { RVServer(makeHandler: $0) }
        let childGraph = try await child.build()
        let server = childGraph[RVServerKey.self]
        #expect(try await server.makeHandler().id == 3)
        try await parentGraph.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) { try await server.makeHandler() }
        #expect(error?.codes == [.graphShutDown])
    }

    // MARK: Deep chains

    @Test(arguments: [false, true])
    func aChainOfThreeHundredTransientsAlternatingDirectAndOptionalEdges(async: Bool) async throws {
        let depth = 300
        var builder = rvBuilder()
        for level in 0..<depth {
            let link: RVLink = level.isMultiple(of: 2) ? .optional : .direct
            rvLink(rvKey(level), to: rvKey(level + 1), as: link, lifetime: .transient, async: async, into: &builder)
        }
        rvOptionalLeaf(rvKey(depth), absent: rvKey(20_000), into: &builder)
        let frozen = builder
        let graph = try await withDeadline(.seconds(60)) { try await frozen.build() }
        #expect(try await rvResolve(rvKey(0), in: graph) == depth)
        #expect(try await rvResolve(rvKey(depth / 2), in: graph) == depth - depth / 2)
        if async {
            let error = #expect(throws: ServiceGraphError.self) { try rvResolveSynchronously(rvKey(0), in: graph) }
            #expect(error?.codes == [.requiresAwait])
        } else {
            #expect(try rvResolveSynchronously(rvKey(0), in: graph) == depth)
        }
        try await graph.shutdown()
    }

    @Test func aChainOfThreeHundredSingletonsThroughOptionalEdgesIsBuiltInOrder() async throws {
        let depth = 300
        var builder = rvBuilder()
        for level in 0..<depth {
            rvLink(
                rvKey(level),
                to: rvKey(level + 1),
                as: .optional,
                lifetime: .singleton,
                async: level % 3 == 0,
                into: &builder
            )
        }
        rvLeaf(rvKey(depth), value: 0, lifetime: .singleton, into: &builder)
        let frozen = builder
        let graph = try await withDeadline(.seconds(60)) { try await frozen.build() }
        #expect(rvSubscript(rvKey(0), in: graph) == depth)
        #expect(graph.initializationOrder.count == depth + 1)
        #expect(graph.initializationOrder.first == rvKey(depth).serviceName)
        #expect(graph.initializationOrder.last == rvKey(0).serviceName)
        try await graph.shutdown()
    }

    @Test(arguments: [false, true])
    func aChainOfProvidersCalledFromEachFactoryPastSixtyFourLevels(async: Bool) async throws {
        let depth = async ? 300 : 100
        var builder = rvBuilder()
        for level in 0..<depth {
            rvLink(
                rvKey(level),
                to: rvKey(level + 1),
                as: .provider,
                lifetime: .transient,
                async: async,
                into: &builder
            )
        }
        rvLeaf(rvKey(depth), value: 0, lifetime: .transient, into: &builder)
        let frozen = builder
        let graph = try await withDeadline(.seconds(60)) { try await frozen.build() }
        #expect(try await rvResolve(rvKey(0), in: graph) == depth)
        if !async {
            #expect(try rvResolveSynchronously(rvKey(0), in: graph) == depth)
        }
        try await graph.shutdown()
    }

    @Test func aFailureAtTheBottomOfADeepOptionalChainReportsThePath() async throws {
        let depth = 200
        var builder = rvBuilder()
        for level in 0..<depth {
            let link: RVLink = level.isMultiple(of: 2) ? .optional : .direct
            rvLink(rvKey(level), to: rvKey(level + 1), as: link, lifetime: .transient, async: false, into: &builder)
        }
        rvThrowingLeaf(rvKey(depth), into: &builder)
        let graph = try await builder.build()
        let error = try #require(throws: (any Error).self) { try rvResolveSynchronously(rvKey(0), in: graph) }
        #expect(rvIsOrWraps(error, TestFailure("the bottom failed")), "\(error)")
        let graphError = try #require(error as? ServiceGraphError)
        let path = try #require(graphError.problems.first?.path)
        #expect(path.count == depth + 1, "the whole path: \(path.count) steps")
        #expect(path.first == rvKey(0).serviceName)
        #expect(path.last == rvKey(depth).serviceName)
        let asynchronous = await #expect(throws: ServiceGraphError.self) { try await rvResolve(rvKey(0), in: graph) }
        #expect(asynchronous?.problems.first?.path.count == depth + 1)
        try await graph.shutdown()
    }

    @Test func aCycleOfAHundredOptionalEdgesIsReportedWithItsWholePath() throws {
        let depth = 100
        var builder = rvBuilder()
        for level in 0..<(depth - 1) {
            rvLink(
                rvKey(level),
                to: rvKey(level + 1),
                as: .optional,
                lifetime: .transient,
                async: false,
                into: &builder
            )
        }
        rvLink(rvKey(depth - 1), to: rvKey(0), as: .direct, lifetime: .transient, async: false, into: &builder)
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        let path = try #require(error.problems.first?.path)
        #expect(path.count == depth + 1, "\(path.count)")
        #expect(path.first == path.last)
        #expect(!(error.problems.first?.message.contains("(through a provider)") ?? true))
    }

    @Test func aCycleOfAHundredEdgesWithOneProviderIsMarked() throws {
        let depth = 100
        var builder = rvBuilder()
        for level in 0..<(depth - 1) {
            let link: RVLink = level == 70 ? .provider : .direct
            rvLink(rvKey(level), to: rvKey(level + 1), as: link, lifetime: .transient, async: false, into: &builder)
        }
        rvLink(rvKey(depth - 1), to: rvKey(0), as: .optional, lifetime: .transient, async: false, into: &builder)
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        let message = try #require(error.problems.first?.message)
        #expect(message.components(separatedBy: "(through a provider)").count == 2, "exactly one step is marked")
    }

    // MARK: Factories with arguments

    @Test func anArgumentFactoryMakesANewValueOnEachCallFromItsArgumentAndDependencies() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVRepositoryKey.self) { "repo" }
        builder.provide(RVProfileKey.self, arguments: RVUserID.self, dependsOn: RVRepositoryKey.self) {
            id,
            repository in
            made.increment()
            return RVProfile(id: id, repository: repository)
        }
        builder.provide(RVScreensKey.self, dependsOn: ArgumentFactory<RVProfileKey, RVUserID>.self) {
            RVScreens(makeProfile: $0)
        }
        let graph = try await builder.build()
        #expect(made.count == 0, "the function is made, no profile")
        let makeProfile = try await graph.resolve(ArgumentFactory<RVProfileKey, RVUserID>.self)
        let first = try await makeProfile(RVUserID(raw: 42))
        let second = try await makeProfile(RVUserID(raw: 42))
        #expect(first !== second)
        #expect(first.id == RVUserID(raw: 42) && first.repository == "repo")
        let viaScreens = try await graph[RVScreensKey.self].makeProfile(RVUserID(raw: 7))
        #expect(viaScreens.id.raw == 7)
        let viaSubscript = try await graph[ArgumentFactory<RVProfileKey, RVUserID>.self](RVUserID(raw: 8))
        #expect(viaSubscript.id.raw == 8)
        let synchronous = try graph.resolveSynchronously(ArgumentFactory<RVProfileKey, RVUserID>.self)
        #expect(try await synchronous(RVUserID(raw: 9)).id.raw == 9)
        #expect(made.count == 5)
        try await graph.shutdown()
    }

    @Test func argumentsOfOddLayoutsArriveIntactAndInOrder() async throws {
        var builder = rvBuilder()
        builder.provide(RVAlignedKey.self) { RVAligned16(head: 0xA1, vector: SIMD4(1, 2, 3, 4), tail: 0xA2) }
        builder.provide(RVLargeKey.self) { RVLarge(seed: 1_000) }
        builder.provide(RVOddKey.self, arguments: RVAligned16.self, dependsOn: RVAlignedKey.self) {
            argument,
            dependency in
            "\(argument.head)|\(argument.vector)|\(argument.tail)|\(dependency.vector.x)"
        }
        builder.provide(
            RVAlignedProductKey.self,
            arguments: RVEmpty.self,
            RVAligned16.self,
            dependsOn: RVLargeKey?.self
        ) {
            _,
            aligned,
            large in
            var result = aligned
            result.vector &+= SIMD4(repeating: Int32(large?.a ?? -1))
            result.tail &+= 1
            return result
        }
        builder.provide(
            RVLargeProductKey.self,
            arguments: RVLarge.self,
            RVEmpty.self,
            RVAligned16.self,
            dependsOn: RVLargeKey.self,
            RVAlignedKey.self,
            RVMissingKey?.self
        ) { large, _, aligned, dependency, alignedDependency, missing in
            var result = large
            result.p = dependency.p + Int(aligned.vector.w) + Int(alignedDependency.vector.w) + (missing ?? 0)
            result.label += " / " + dependency.label
            return result
        }
        builder.provide(
            RVOddKey.self,
            arguments: (any RVShape).self,
            (@Sendable (Int) -> Int).self,
            Int?.self,
            dependsOn: Provider<RVLargeKey>.self
        ) { shape, transform, maybe, large in
            "\(transform(shape.area))|\(maybe.map(String.init) ?? "none")|\(try await large().a)"
        }
        let graph = try await builder.build()

        let aligned = RVAligned16(head: 0x11, vector: SIMD4(-5, 6, -7, 8), tail: 0xFE)
        let oneArgument = try await graph.resolve(ArgumentFactory<RVOddKey, RVAligned16>.self)
        #expect(try await oneArgument(aligned) == "17|SIMD4<Int32>(-5, 6, -7, 8)|254|1")

        let twoArguments = try await graph.resolve(ArgumentFactory<RVAlignedProductKey, RVEmpty, RVAligned16>.self)
        let shifted = try await twoArguments(RVEmpty(), aligned)
        #expect(shifted == RVAligned16(head: 0x11, vector: SIMD4(995, 1_006, 993, 1_008), tail: 0xFF))

        let threeArguments = try await graph.resolve(
            ArgumentFactory<RVLargeProductKey, RVLarge, RVEmpty, RVAligned16>.self
        )
        let large = try await threeArguments(RVLarge(seed: 5), RVEmpty(), aligned)
        var expected = RVLarge(seed: 5)
        expected.p = RVLarge(seed: 1_000).p + 8 + 4
        expected.label += " / " + RVLarge(seed: 1_000).label
        #expect(large == expected)

        let existential = try await graph.resolve(
            ArgumentFactory<RVOddKey, any RVShape, @Sendable (Int) -> Int, Int?>.self
        )
        #expect(try await existential(RVSquare(side: 3), { $0 * 2 }, 5) == "18|5|1000")
        #expect(try await existential(RVSquare(side: 4), { $0 - 1 }, nil) == "15|none|1000")
        try await graph.shutdown()
    }

    @Test func aThousandConcurrentCallsEachGetTheirOwnArguments() async throws {
        var builder = rvBuilder()
        builder.provide(RVRepositoryKey.self) { "repo" }
        builder.provide(RVProfileKey.self, arguments: RVUserID.self, dependsOn: RVRepositoryKey.self) {
            id,
            repository in
            await Task.yield()
            return RVProfile(id: id, repository: repository)
        }
        builder.provide(RVAlignedProductKey.self, arguments: RVAligned16.self, Int.self) { aligned, shift in
            await Task.yield()
            var result = aligned
            result.vector &+= SIMD4(repeating: Int32(shift))
            return result
        }
        let graph = try await builder.build()
        let makeProfile = graph[ArgumentFactory<RVProfileKey, RVUserID>.self]
        let shift = graph[ArgumentFactory<RVAlignedProductKey, RVAligned16, Int>.self]
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    let profile = try await makeProfile(RVUserID(raw: index))
                    let input = RVAligned16(head: UInt8(index % 256), vector: SIMD4(repeating: Int32(index)), tail: 3)
                    let shifted = try await shift(input, index)
                    let good =
                        profile.id.raw == index && shifted.head == input.head && shifted.tail == 3
                        && shifted.vector == SIMD4(repeating: Int32(2 * index))
                    return good ? 0 : 1
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        try await graph.shutdown()
    }

    @Test func aThrowingArgumentFactoryThrowsPerCallAndStaysUsable() async throws {
        var builder = rvBuilder()
        builder.provide(RVProfileKey.self, arguments: RVUserID.self) { id in
            if id.raw.isMultiple(of: 3) { throw TestFailure("no profile for \(id.raw)") }
            return RVProfile(id: id, repository: "ok")
        }
        let graph = try await builder.build()
        let makeProfile = try await graph.resolve(ArgumentFactory<RVProfileKey, RVUserID>.self)
        let error = try #require(await #expect(throws: (any Error).self) { try await makeProfile(RVUserID(raw: 3)) })
        #expect(rvIsOrWraps(error, TestFailure("no profile for 3")), "\(error)")
        #expect(try await makeProfile(RVUserID(raw: 4)).id.raw == 4)
        let failures = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<300 {
                group.addTask { (try? await makeProfile(RVUserID(raw: index))) == nil }
            }
            var failures = 0
            for await failed in group where failed { failures += 1 }
            return failures
        }
        #expect(failures == 100)
        try await graph.shutdown()
    }

    @Test func aScopedArgumentFactoryUsesItsScopesDependencies() async throws {
        let made = Tally()
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(made.increment()) }
        builder.provide(RVProfileKey.self, lifetime: .scoped, arguments: RVUserID.self, dependsOn: RVScopedKey.self) {
            id,
            token in
            RVProfile(id: id, repository: "scope \(token.id)")
        }
        builder.provide(
            RVScreensKey.self,
            lifetime: .transient,
            dependsOn: ArgumentFactory<RVProfileKey, RVUserID>.self
        ) {
            RVScreens(makeProfile: $0)
        }
        let graph = try await builder.build()
        let first = try graph.makeScope()
        let second = try graph.makeScope()
        let inFirst = try await first.resolve(ArgumentFactory<RVProfileKey, RVUserID>.self)
        let inSecond = try await second.resolve(ArgumentFactory<RVProfileKey, RVUserID>.self)
        #expect(try await inFirst(RVUserID(raw: 1)).repository == "scope 1")
        #expect(try await inSecond(RVUserID(raw: 1)).repository == "scope 2")
        #expect(try await first.resolve(RVScreensKey.self).makeProfile(RVUserID(raw: 2)).repository == "scope 1")
        #expect(made.count == 2)
        let error = await #expect(throws: ServiceGraphError.self) {
            try await graph.resolve(ArgumentFactory<RVProfileKey, RVUserID>.self)
        }
        #expect(error?.codes == [.wrongLifetime])
        try await first.close()
        try await second.close()
        try await graph.shutdown()
    }

    @Test func aSingletonArgumentFactoryOverAScopedOrTransientDependencyIsCaptive() throws {
        var builder = rvBuilder()
        builder.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(1) }
        builder.provide(RVTransientKey.self, lifetime: .transient) { RVToken(2) }
        builder.provide(RVProfileKey.self, arguments: RVUserID.self, dependsOn: RVScopedKey.self, line: 6001) {
            id,
            token in
            RVProfile(id: id, repository: "\(token.id)")
        }
        builder.provide(RVOddKey.self, arguments: Int.self, dependsOn: RVTransientKey.self, line: 6002) {
            number,
            token in
            "\(number) \(token.id)"
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency, .captiveDependency], "\(error)")
        let scoped = try #require(error.problems.first { $0.site?.line == 6001 })
        #expect(scoped.key == "RVProfileKey(RVUserID)")
        #expect(scoped.path.contains("RVScopedKey"), "\(scoped.path)")
        let transient = try #require(error.problems.first { $0.site?.line == 6002 })
        #expect(transient.key == "RVOddKey(Int)")
    }

    @Test func anOverrideReplacesTheArgumentFactoryAndAWrongArgumentTypeIsUnknown() async throws {
        var application = rvBuilder()
        application.provide(RVRepositoryKey.self) { "real repo" }
        application.provide(RVProfileKey.self, arguments: RVUserID.self, dependsOn: RVRepositoryKey.self) {
            id,
            repository in
            RVProfile(id: id, repository: repository)
        }
        application.provide(RVScreensKey.self, dependsOn: ArgumentFactory<RVProfileKey, RVUserID>.self) {
            RVScreens(makeProfile: $0)
        }
        var test = application
        test.override(RVProfileKey.self, arguments: RVUserID.self) { id in RVProfile(id: id, repository: "double") }
        let graph = try await test.build()
        #expect(try await graph[RVScreensKey.self].makeProfile(RVUserID(raw: 1)).repository == "double")
        let dump = graph.dump(.json, includingTimings: false)
        let service = try rvService("RVProfileKey(RVUserID)", in: try rvJSON(dump))
        #expect(service["override"] as? Bool == true)
        try await graph.shutdown()

        var wrong = application
        wrong.override(RVProfileKey.self, arguments: String.self) { id in
            RVProfile(id: RVUserID(raw: id.count), repository: "x")
        }
        let error = try #require(throws: ServiceGraphError.self) { try wrong.validate() }
        #expect(error.codes == [.overrideOfUnknownKey])
        #expect(error.problems.first?.key == "RVProfileKey(String)")

        var scoped = application
        scoped.provide(RVScopedKey.self, lifetime: .scoped) { RVToken(1) }
        scoped.override(RVProfileKey.self, lifetime: .scoped, arguments: RVUserID.self, dependsOn: RVScopedKey.self) {
            id,
            token in RVProfile(id: id, repository: "scoped double \(token.id)")
        }
        let scopedError = try #require(throws: ServiceGraphError.self) { try scoped.validate() }
        #expect(scopedError.codes == [.captiveDependency], "the singleton screens now hold a scoped function")
        #expect(scopedError.problems.first?.key == "RVScreensKey")
    }

    @Test func aDependentNamingOtherArgumentTypesIsAMissingProvider() throws {
        var builder = rvBuilder()
        builder.provide(RVProfileKey.self, arguments: RVUserID.self, String.self) { id, name in
            RVProfile(id: id, repository: name)
        }
        builder.provide(RVIntHolderKey.self, dependsOn: ArgumentFactory<RVProfileKey, Int>.self, line: 31) { _ in 0 }
        builder.provide(
            RVStringHolderKey.self,
            dependsOn: ArgumentFactory<RVProfileKey, String, RVUserID>.self,
            line: 32
        ) {
            _ in ""
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider, .missingProvider], "\(error)")
        #expect(Set(error.problems.map(\.key)) == ["RVProfileKey(Int)", "RVProfileKey(String, RVUserID)"])
        #expect(Set(error.problems.compactMap { $0.site?.line }) == [31, 32])
    }

    @Test func askingForTheProductItselfNamesTheFunctionToAskFor() async throws {
        var builder = rvBuilder()
        builder.provide(RVProfileKey.self, arguments: RVUserID.self) { RVProfile(id: $0, repository: "") }
        builder.provide(RVProfileKey.self, arguments: Int.self) { RVProfile(id: RVUserID(raw: $0), repository: "") }
        let graph = try await builder.build()
        let resolved = try #require(
            await #expect(throws: ServiceGraphError.self) { try await graph.resolve(RVProfileKey.self) }
        )
        #expect(resolved.description.contains("ArgumentFactory<RVProfileKey, RVUserID>"), "\(resolved)")
        #expect(resolved.description.contains("ArgumentFactory<RVProfileKey, Int>"), "\(resolved)")
        let synchronous = try #require(
            #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(RVProfileKey.self) }
        )
        #expect(synchronous.description.contains("ArgumentFactory<RVProfileKey, RVUserID>"), "\(synchronous)")
        try await graph.shutdown()

        var dependent = builder
        dependent.provide(RVScreensKey.self, dependsOn: RVProfileKey.self) { _ in
            RVScreens(makeProfile: { RVProfile(id: $0, repository: "") })
        }
        dependent.provide(RVServerKey.self, dependsOn: Provider<RVProfileKey>.self) { _ in
            RVServer(makeHandler: try Self.unreachable())
        }
        let error = try #require(throws: ServiceGraphError.self) { try dependent.validate() }
        #expect(error.codes == [.missingProvider, .missingProvider], "\(error)")
        for problem in error.problems {
            #expect(problem.message.contains("ArgumentFactory<RVProfileKey, RVUserID>"), "\(problem.message)")
        }
    }

    @Test func aProductKeyMayAlsoBeProvidedPlainly() async throws {
        var builder = rvBuilder()
        builder.provide(RVProfileKey.self) { RVProfile(id: RVUserID(raw: 0), repository: "plain") }
        builder.provide(RVProfileKey.self, arguments: RVUserID.self) { RVProfile(id: $0, repository: "made") }
        let graph = try await builder.build()
        #expect(graph[RVProfileKey.self].repository == "plain")
        #expect(try await graph[ArgumentFactory<RVProfileKey, RVUserID>.self](RVUserID(raw: 3)).repository == "made")
        try await graph.shutdown()
    }

    @Test func argumentFactoriesWithOptionalAndProviderDependenciesAndAsTransientFunctions() async throws {
        let tokens = Tally()
        let functions = Tally()
        var builder = rvBuilder()
        builder.provide(RVTransientKey.self, lifetime: .transient) { RVToken(tokens.increment()) }
        builder.provide(
            RVOddKey.self,
            lifetime: .transient,
            arguments: Int.self,
            String.self,
            dependsOn: RVAnalyticsKey?.self,
            Provider<RVTransientKey>.self,
            RVTransientKey.self
        ) { number, text, analytics, makeToken, token in
            "\(number)-\(text)-\(analytics ?? "nil")-\(try await makeToken().id)-\(token.id)"
        }
        builder.provide(
            RVStringHolderKey.self,
            lifetime: .transient,
            dependsOn: Provider<ArgumentFactory<RVOddKey, Int, String>>.self
        ) {
            makeFunction in
            functions.increment()
            let function = try makeFunction.resolveSynchronously()
            return "holder made \(functions.count) with \(type(of: function))"
        }
        let graph = try await builder.build()
        let function = try await graph.resolve(ArgumentFactory<RVOddKey, Int, String>.self)
        #expect(tokens.count == 1, "the transient function was made with one token")
        #expect(try await function(1, "a") == "1-a-nil-2-1")
        #expect(try await function(2, "b") == "2-b-nil-3-1")
        let another = try await graph.resolve(ArgumentFactory<RVOddKey, Int, String>.self)
        #expect(try await another(3, "c") == "3-c-nil-5-4", "a transient function is made again with a new token")
        #expect(try graph.resolveSynchronously(RVStringHolderKey.self).hasPrefix("holder made 1"))
        try await graph.shutdown()
    }

    // MARK: Dumps

    @Test func everyDumpShowsOptionalProviderAndAbsentEdgesApart() async throws {
        var builder = rvBuilder()
        builder.provide(RVPaymentsKey.self) { 1 }
        builder.provide(RVHandlerKey.self, lifetime: .transient) { RVToken(0) }
        builder.provide(RVRepositoryKey.self) { "repo" }
        builder.provide(
            RVCheckoutKey.self,
            dependsOn: RVAnalyticsKey?.self,
            RVPaymentsKey?.self,
            Provider<RVHandlerKey>.self,
            RVRepositoryKey.self
        ) { _, _, _, repository in repository }
        let graph = try await builder.build()
        for (origin, dump) in [("builder", builder.dump), ("graph", { graph.dump($0) })]
            as [(String, (DumpFormat) -> String)]
        {
            let text = dump(.text)
            #expect(text.contains("(optional)"), "\(origin) text:\n\(text)")
            #expect(text.contains("(provider)"), "\(origin) text:\n\(text)")
            #expect(text.contains("RVAnalyticsKey") && text.contains("not provided"), "\(origin) text:\n\(text)")
            let optionalLine = text.split(separator: "\n").first {
                $0.contains("RVPaymentsKey") && $0.contains("(optional)")
            }
            #expect(optionalLine != nil, "the present optional edge is marked on its own line:\n\(text)")
            let providerLine = text.split(separator: "\n").first {
                $0.contains("RVHandlerKey") && $0.contains("(provider)")
            }
            #expect(providerLine != nil, "\(origin) text:\n\(text)")
            let repositoryLine = text.split(separator: "\n").first { $0.contains("RVRepositoryKey") }
            #expect(repositoryLine.map { !$0.contains("(optional)") && !$0.contains("(provider)") } == true)

            let dot = dump(.dot)
            let dotLines = dot.split(separator: "\n")
            #expect(dotLines.contains { $0.contains("dashed") && $0.contains("optional") }, "\(origin) dot:\n\(dot)")
            #expect(dotLines.contains { $0.contains("dashed") && $0.contains("provider") }, "\(origin) dot:\n\(dot)")
            #expect(dotLines.contains { $0.contains("dotted") }, "\(origin) dot:\n\(dot)")
            #expect(dot.contains("not provided (optional)"), "\(origin) dot:\n\(dot)")
            #expect(dotLines.filter { $0.contains("->") && $0.contains("dashed") }.count == 2, "\(origin) dot:\n\(dot)")

            let mermaid = dump(.mermaid)
            #expect(mermaid.contains("optional"), "\(origin) mermaid:\n\(mermaid)")
            #expect(mermaid.contains("provider"), "\(origin) mermaid:\n\(mermaid)")
            #expect(mermaid.contains("not provided (optional)"), "\(origin) mermaid:\n\(mermaid)")

            let json = try rvJSON(dump(.json))
            let checkout = try rvService("RVCheckoutKey", in: json)
            // An absent optional dependency is listed apart, not among `dependencies`.
            #expect(checkout["dependencies"] as? [String] == ["RVPaymentsKey", "RVHandlerKey", "RVRepositoryKey"])
            #expect(checkout["dependencyKinds"] as? [String] == ["optional", "provider", "direct"])
            #expect(checkout["absentOptionalDependencies"] as? [String] == ["RVAnalyticsKey"])
            #expect((checkout["missingDependencies"] as? [String])?.contains("RVAnalyticsKey") != true)
            let dependencies = checkout["dependencies"] as? [String] ?? []
            let ids = checkout["dependencyIds"] as? [Any] ?? []
            #expect(dependencies.count == ids.count, "ids join dependencies one for one: \(dependencies) \(ids)")
            #expect(json["problems"] as? [Any] == nil || (json["problems"] as? [Any])?.isEmpty == true)
        }
        try await graph.shutdown()
    }

    @Test func everyDumpNamesAnArgumentFactoryAsAFunction() async throws {
        var builder = rvBuilder()
        builder.provide(RVRepositoryKey.self) { "repo" }
        builder.provide(RVProfileKey.self, arguments: RVUserID.self, dependsOn: RVRepositoryKey.self) {
            id,
            repository in
            RVProfile(id: id, repository: repository)
        }
        builder.provide(RVOddKey.self, lifetime: .scoped, arguments: Int.self, String.self, RVEmpty.self) {
            number,
            _,
            _ in
            "\(number)"
        }
        builder.provide(RVScreensKey.self, dependsOn: ArgumentFactory<RVProfileKey, RVUserID>.self) {
            RVScreens(makeProfile: $0)
        }
        let graph = try await builder.build()
        for (origin, dump) in [("builder", builder.dump), ("graph", { graph.dump($0) })]
            as [(String, (DumpFormat) -> String)]
        {
            let text = dump(.text)
            #expect(text.contains("RVProfileKey(RVUserID)"), "\(origin) text:\n\(text)")
            #expect(text.contains("(RVUserID) async throws -> RVProfile"), "\(origin) text:\n\(text)")
            #expect(text.contains("singleton function"), "\(origin) text:\n\(text)")
            #expect(text.contains("RVOddKey(Int, String, RVEmpty)"), "\(origin) text:\n\(text)")
            #expect(text.contains("scoped function"), "\(origin) text:\n\(text)")
            for format in [DumpFormat.dot, .mermaid] {
                #expect(dump(format).contains("RVProfileKey(RVUserID)"), "\(origin) \(format):\n\(dump(format))")
            }
            let json = try rvJSON(dump(.json))
            let profile = try rvService("RVProfileKey(RVUserID)", in: json)
            #expect(profile["arguments"] as? [String] == ["RVUserID"])
            #expect(profile["valueType"] as? String == "(RVUserID) async throws -> RVProfile")
            let odd = try rvService("RVOddKey(Int, String, RVEmpty)", in: json)
            #expect(odd["arguments"] as? [String] == ["Int", "String", "RVEmpty"])
            #expect(odd["lifetime"] as? String == "scoped")
            let repository = try rvService("RVRepositoryKey", in: json)
            #expect(repository["arguments"] is NSNull, "a plain service has null arguments")
            let screens = try rvService("RVScreensKey", in: json)
            #expect(screens["dependencies"] as? [String] == ["RVProfileKey(RVUserID)"])
            #expect(screens["dependencyKinds"] as? [String] == ["direct"])
        }
        try await graph.shutdown()
    }

    // MARK: Scale

    @Test func tenThousandServicesWithOptionalAndProviderEdges() async throws {
        let count = 10_000
        var builder = rvBuilder()
        var expected = [Int](repeating: 0, count: count)
        var absentEdges = 0
        for index in 0..<count {
            if index == 0 {
                rvChainStart(rvKey(0), into: &builder)
                expected[0] = 1
            } else if index < 4 {
                rvChainNext(rvKey(index), previous: rvKey(index - 1), into: &builder)
                expected[index] = 1 &+ expected[index - 1]
            } else if index.isMultiple(of: 10) {
                rvWideWithAbsent(
                    rvKey(index),
                    previous: rvKey(index - 1),
                    half: rvKey(index / 2),
                    third: rvKey(index / 3),
                    absent: rvKey(count + index),
                    into: &builder
                )
                absentEdges += 1
                expected[index] = 1 &+ expected[index - 1] &+ expected[index / 2] &+ -1_000_000
            } else {
                rvWide(
                    rvKey(index),
                    previous: rvKey(index - 1),
                    half: rvKey(index / 2),
                    third: rvKey(index / 3),
                    into: &builder
                )
                expected[index] = 1 &+ expected[index - 1] &+ expected[index / 2]
            }
        }
        try builder.validate()
        let warnings = builder.lint().filter { $0.code == .absentOptionalDependency }
        #expect(warnings.count == absentEdges)
        let frozen = builder
        let graph = try await withDeadline(.seconds(120)) { try await frozen.build() }
        #expect(graph.initializationOrder.count == count)
        for index in [0, 3, 4, 10, 4_999, 9_990, count - 1] {
            #expect(rvSubscript(rvKey(index), in: graph) == expected[index], "service \(index)")
        }
        let json = try rvJSON(graph.dump(.json, includingTimings: false))
        let services = try rvServices(json)
        #expect(services.count == count)
        let kinds = services.flatMap { $0["dependencyKinds"] as? [String] ?? [] }
        #expect(kinds.filter { $0 == "provider" }.count == count - 4)
        #expect(kinds.filter { $0 == "optional" }.count == count - 4, "absent ones are listed apart")
        #expect(kinds.filter { $0 == "direct" }.count == count - 1)
        let absent = services.flatMap { $0["absentOptionalDependencies"] as? [String] ?? [] }
        #expect(absent.count == absentEdges)
        #expect(graph.dump(.dot).contains("not provided (optional)"))
        #expect(graph.dump(.text).contains("(provider)"))
        try await graph.shutdown()
    }
}
