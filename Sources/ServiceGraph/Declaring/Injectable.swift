/// A service that declares its own dependencies, so it can be provided without a closure.
///
/// An `Injectable` service is its own key: its `Value` is itself, and other providers depend on it by naming the
/// type. Its dependencies are an associated ``DependencyList``, usually ``Needs``:
///
/// ```swift
/// struct SignupService: Injectable {
///     typealias Dependencies = Needs<DatabaseKey, LoggerKey>
///     let database: any Database
///     let logger: any AppLogger
///
///     init(dependencies: (any Database, any AppLogger)) {
///         (database, logger) = dependencies
///     }
/// }
///
/// builder.provide(SignupService.self, lifetime: .transient)
/// ```
///
/// With one dependency, `dependencies` is that value; with none, it is `()`.
public protocol Injectable: ServiceKey where Value == Self {
    /// The keys this service needs, in the order its initializer receives their values.
    associatedtype Dependencies: DependencyList = Needs<>

    /// Creates the service from the values of its ``Dependencies``.
    init(dependencies: Dependencies.Values) throws
}

/// A list of service keys whose values an ``Injectable`` service receives together.
///
/// ``Needs`` is the list to use; the requirement below is how the builder registers it.
public protocol DependencyList {
    /// The values of the keys, as a tuple in declaration order (a single value for one key).
    associatedtype Values: Sendable

    /// Registers `make` as the provider of `key`, depending on this list's keys.
    ///
    /// Not API: called by ``ServiceGraph/Builder/provide(_:lifetime:fileID:line:)``.
    @_documentation(visibility: private)
    static func _register<Key: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime,
        in builder: inout ServiceGraph.Builder,
        fileID: StaticString,
        line: UInt,
        make: @escaping @Sendable (Values) throws -> Key.Value
    )
}

/// The keys an ``Injectable`` service depends on: `Needs<DatabaseKey, LoggerKey>`.
///
/// Only a type: it names a list of keys and is never made.
public struct Needs<each Key: ServiceKey>: DependencyList {
    public typealias Values = (repeat (each Key).Value)

    /// Private, so that no value is ever made (a parameter pack cannot be a caseless enum's).
    private init() {}

    @_documentation(visibility: private)
    @inlinable
    @inline(__always)
    public static func _register<Provided: ServiceKey>(
        _ key: Provided.Type,
        lifetime: Lifetime,
        in builder: inout ServiceGraph.Builder,
        fileID: StaticString,
        line: UInt,
        make: @escaping @Sendable ((repeat (each Key).Value)) throws -> Provided.Value
    ) {
        builder.provide(
            key,
            lifetime: lifetime,
            dependsOn: repeat (each Key).self,
            fileID: fileID,
            line: line,
            factory: { (value: repeat (each Key).Value) throws -> Provided.Value in
                try make((repeat each value))
            }
        )
    }
}
