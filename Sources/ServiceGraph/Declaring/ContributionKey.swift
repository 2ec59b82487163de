/// A key whose value is a list that several providers contribute to, in an order they declare.
///
/// Features register into shared lists (middleware, plugins, observers, migrations, health checks)
/// without one place that knows them all: each calls
/// ``ServiceGraph/Builder/contribute(_:id:lifetime:position:before:after:dependsOn:fileID:line:factory:)-49hvt``
/// with its own dependencies, and whatever depends on the key receives every contribution, typed, in
/// order.
///
/// ```swift
/// enum MiddlewareKey: ContributionKey { typealias Element = any Middleware }
///
/// builder.contribute(MiddlewareKey.self, id: "auth", dependsOn: SessionsKey.self) { AuthMiddleware($0) }
/// builder.contribute(MiddlewareKey.self, id: "log", before: ["auth"]) { LogMiddleware() }
/// builder.provide(RouterKey.self, dependsOn: MiddlewareKey.self) { Router(middleware: $0) }  // [log, auth]
/// ```
///
/// The order is stable and explicit: the list is filled one contribution at a time, each time with the
/// contribution that has the lowest `position`, then the earliest registration, among those whose
/// `before` and `after` constraints allow it to come next. A contradiction in the constraints, an `id`
/// used twice or a constraint naming an id nobody contributes is a validation error naming the sites
/// involved. A key nobody contributes to is an empty list for the services that depend on it, unless
/// it says it needs at least one (``needsContribution``); it is not in the graph otherwise (an optional
/// dependency on it gets nil).
public protocol ContributionKey: ServiceKey where Value == [Element] {
    /// The type of one contribution.
    associatedtype Element: Sendable

    /// Whether validation requires at least one contribution; false by default (an empty list).
    static var needsContribution: Bool { get }
}

extension ContributionKey {
    public static var needsContribution: Bool { false }
}

/// A key whose value is a dictionary that several providers contribute to, each under its id.
///
/// The dictionary form of ``ContributionKey``, for lookups by name (plugins, health checks, handlers by
/// command): each
/// ``ServiceGraph/Builder/contribute(_:id:lifetime:dependsOn:fileID:line:factory:)-7ojdb``
/// adds its element under its `id`, and whatever depends on the key receives them all. An id used twice
/// is a validation error naming both sites.
///
/// ```swift
/// enum HealthChecksKey: KeyedContributionKey { typealias Element = any HealthCheck }
///
/// builder.contribute(HealthChecksKey.self, id: "database", dependsOn: DatabaseKey.self) { DatabaseCheck($0) }
/// builder.provide(StatusKey.self, dependsOn: HealthChecksKey.self) { Status(checks: $0) }  // ["database": ...]
/// ```
public protocol KeyedContributionKey: ServiceKey where Value == [String: Element] {
    /// The type of one contribution.
    associatedtype Element: Sendable

    /// Whether validation requires at least one contribution; false by default (an empty dictionary).
    static var needsContribution: Bool { get }
}

extension KeyedContributionKey {
    public static var needsContribution: Bool { false }
}

/// The key of the contribution at one position of a collection: `Collection[position]`. Made when the
/// graph is planned, once the order is known, so that each contribution is a service of its own, with
/// its own slot, dependencies and lifetime.
@usableFromInline
enum ContributedElement<Collection: ServiceKey, Element: Sendable, Position: _Ordinal>: ServiceKey {
    @usableFromInline
    typealias Value = Element

    @usableFromInline
    static var serviceName: String { "\(Collection.serviceName)[\(Position.value)]" }

    /// The key of the contribution at `position` of the same collection.
    @usableFromInline
    static func element(at position: Int) -> any ServiceKey.Type {
        func key<Other: _Ordinal>(_: Other.Type) -> any ServiceKey.Type {
            ContributedElement<Collection, Element, Other>.self
        }
        return key(ordinal(position))
    }
}

/// A non-negative integer as a type, so that a position can be part of a key's type: its bits, the
/// least significant outermost.
public protocol _Ordinal {
    static var value: Int { get }
}

@usableFromInline
enum OrdinalEnd: _Ordinal {
    @usableFromInline
    static var value: Int { 0 }
}

enum OrdinalBit0<Higher: _Ordinal>: _Ordinal {
    static var value: Int { Higher.value * 2 }
}

enum OrdinalBit1<Higher: _Ordinal>: _Ordinal {
    static var value: Int { Higher.value * 2 + 1 }
}

/// The type spelling `value`: its bits from the most significant in, so the least is outermost.
func ordinal(_ value: Int) -> any _Ordinal.Type {
    precondition(value >= 0, "a position is never negative")
    func wrap<Higher: _Ordinal>(_: Higher.Type, one: Bool) -> any _Ordinal.Type {
        one ? OrdinalBit1<Higher>.self : OrdinalBit0<Higher>.self
    }
    var type: any _Ordinal.Type = OrdinalEnd.self
    guard value > 0 else { return type }
    for bit in (0..<(Int.bitWidth - value.leadingZeroBitCount)).reversed() {
        type = wrap(type, one: (value >> bit) & 1 == 1)
    }
    return type
}
