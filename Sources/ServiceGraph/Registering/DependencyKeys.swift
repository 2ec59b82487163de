/// The keys a provider depends on, in declaration order, each with how it depends on it
/// (``_DependencyKind``: directly, or optionally).
///
/// Up to four are kept inline, so a registration made by a fixed-arity `provide` allocates nothing
/// for them: at startup, an allocation per registration costs more than the rest of declaring it.
/// More spill into an array. Each is kept as its bare metatype (one word, where `any ServiceKey.Type`
/// takes two): a registration is copied into the builder's list and from it into a graph's plan, and
/// only diagnostics need the keys as `ServiceKey`s again. A wrapper (`AnalyticsKey?`) is kept as the key
/// it wraps, with its kind.
@usableFromInline
struct _DependencyKeys: RandomAccessCollection, Sendable {
    @usableFromInline
    typealias Key = any ServiceKey.Type

    @usableFromInline
    var inline: (Any.Type?, Any.Type?, Any.Type?, Any.Type?)
    /// The keys past the fourth; nil when there are none (an empty array would still cost a call
    /// and a release per registration where `provide` is inlined).
    @usableFromInline
    var spilled: [(key: Any.Type, kind: _DependencyKind)]?
    @usableFromInline
    var storedCount: UInt32
    /// The kinds of the inline keys, a byte each (zero, `direct`, for most registrations).
    @usableFromInline
    var inlineKinds: UInt32

    /// A list of these parts (see `ServiceGraph.Builder._appendRegistration`, which is given them).
    init(
        inline: (Any.Type?, Any.Type?, Any.Type?, Any.Type?),
        spilled: [(key: Any.Type, kind: _DependencyKind)]?,
        storedCount: UInt32,
        inlineKinds: UInt32
    ) {
        self.inline = inline
        self.spilled = spilled
        self.storedCount = storedCount
        self.inlineKinds = inlineKinds
    }

    @inlinable
    init() {
        inline = (nil, nil, nil, nil)
        spilled = nil
        storedCount = 0
        inlineKinds = 0
    }

    /// The keys of a fixed-arity `provide`, in order: a few stores of constants once `provide` is
    /// inlined (a loop or a switch per key here would grow every registration's code, and a long
    /// composition root would stop being inlined partway; see `ServiceGraph.Builder+FixedArity.swift`).
    @inlinable
    @inline(__always)
    init<D1: ServiceKey>(_ d1: D1.Type) {
        inline = (D1._dependencyTarget, nil, nil, nil)
        spilled = nil
        storedCount = 1
        inlineKinds = Self.kinds(D1._dependencyKind)
    }

    @inlinable
    @inline(__always)
    init<D1: ServiceKey, D2: ServiceKey>(_ d1: D1.Type, _ d2: D2.Type) {
        inline = (D1._dependencyTarget, D2._dependencyTarget, nil, nil)
        spilled = nil
        storedCount = 2
        inlineKinds = Self.kinds(D1._dependencyKind, D2._dependencyKind)
    }

    @inlinable
    @inline(__always)
    init<D1: ServiceKey, D2: ServiceKey, D3: ServiceKey>(_ d1: D1.Type, _ d2: D2.Type, _ d3: D3.Type) {
        inline = (D1._dependencyTarget, D2._dependencyTarget, D3._dependencyTarget, nil)
        spilled = nil
        storedCount = 3
        inlineKinds = Self.kinds(D1._dependencyKind, D2._dependencyKind, D3._dependencyKind)
    }

    @inlinable
    @inline(__always)
    init<D1: ServiceKey, D2: ServiceKey, D3: ServiceKey, D4: ServiceKey>(
        _ d1: D1.Type,
        _ d2: D2.Type,
        _ d3: D3.Type,
        _ d4: D4.Type
    ) {
        inline = (D1._dependencyTarget, D2._dependencyTarget, D3._dependencyTarget, D4._dependencyTarget)
        spilled = nil
        storedCount = 4
        inlineKinds = Self.kinds(D1._dependencyKind, D2._dependencyKind, D3._dependencyKind, D4._dependencyKind)
    }

    /// The inline kinds, a byte each.
    @inlinable
    @inline(__always)
    static func kinds(
        _ first: _DependencyKind,
        _ second: _DependencyKind = .direct,
        _ third: _DependencyKind = .direct,
        _ fourth: _DependencyKind = .direct
    ) -> UInt32 {
        UInt32(first.rawValue) | UInt32(second.rawValue) << 8 | UInt32(third.rawValue) << 16
            | UInt32(fourth.rawValue) << 24
    }

    /// Keys as a built graph keeps them (a child graph's inherited registrations).
    init(_ edges: some Sequence<(key: Key, kind: _DependencyKind)>) {
        self.init()
        for edge in edges { append(edge.key, kind: edge.kind) }
    }

    /// Appends the dependency `Dependency` names: its key (the wrapped one, for a wrapper) and kind.
    @inlinable
    @inline(__always)
    mutating func append<Dependency: ServiceKey>(_ dependency: Dependency.Type) {
        append(Dependency._dependencyTarget, kind: Dependency._dependencyKind)
    }

    @inlinable
    mutating func append(_ key: Key, kind: _DependencyKind) {
        let position = Int(storedCount)
        switch position {
        case 0: inline.0 = key
        case 1: inline.1 = key
        case 2: inline.2 = key
        case 3: inline.3 = key
        default:
            if spilled == nil { spilled = [] }
            spilled!.append((key, kind))
        }
        if position < 4 { inlineKinds |= UInt32(kind.rawValue) << (8 * position) }
        storedCount += 1
    }

    @inlinable
    var startIndex: Int { 0 }
    @inlinable
    var endIndex: Int { Int(storedCount) }

    /// The key at `position` (a dynamic cast: for diagnostics, not for the build).
    @usableFromInline
    subscript(position: Int) -> Key {
        precondition(position >= 0 && position < count, "dependency index out of range")
        // Every element was appended as a `ServiceKey` type.
        return type(at: position) as! any ServiceKey.Type
    }

    private func type(at position: Int) -> Any.Type {
        switch position {
        case 0: inline.0.unsafelyUnwrapped
        case 1: inline.1.unsafelyUnwrapped
        case 2: inline.2.unsafelyUnwrapped
        case 3: inline.3.unsafelyUnwrapped
        default: spilled.unsafelyUnwrapped[position - 4].key
        }
    }

    /// How the provider depends on the key at `position`.
    func kind(at position: Int) -> _DependencyKind {
        if position < 4 { return _DependencyKind(rawValue: UInt8(truncatingIfNeeded: inlineKinds >> (8 * position)))! }
        return spilled.unsafelyUnwrapped[position - 4].kind
    }

    /// Whether any key is not a direct dependency.
    var hasWrappers: Bool {
        inlineKinds != 0 || (spilled?.contains { $0.kind != .direct } ?? false)
    }

    /// Calls `body` with the identity and kind of each key, in order, reading them in place.
    func forEachEdge(_ body: (ObjectIdentifier, _DependencyKind) -> Void) {
        let count = self.count
        if inlineKinds == 0 {
            if count > 0 { body(ObjectIdentifier(inline.0.unsafelyUnwrapped), .direct) }
            if count > 1 { body(ObjectIdentifier(inline.1.unsafelyUnwrapped), .direct) }
            if count > 2 { body(ObjectIdentifier(inline.2.unsafelyUnwrapped), .direct) }
            if count > 3 { body(ObjectIdentifier(inline.3.unsafelyUnwrapped), .direct) }
        } else {
            for position in 0..<Swift.min(count, 4) { body(ObjectIdentifier(type(at: position)), kind(at: position)) }
        }
        if count > 4 {
            for edge in spilled.unsafelyUnwrapped { body(ObjectIdentifier(edge.key), edge.kind) }
        }
    }
}
