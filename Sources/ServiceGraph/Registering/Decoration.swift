/// One `decorate` call, as the builder keeps it: a wrapper of a key's value, made into a provider of its
/// own when the graph is planned (``Decorations``).
struct Decoration: Sendable {
    /// The key whose value it wraps.
    let key: any ServiceKey.Type
    /// The key of the value at one stage of `key`'s decoration (``DecoratedStage``).
    let stage: @Sendable (Int) -> any ServiceKey.Type
    /// The decorator's own dependencies; the value it wraps comes first, before these.
    let dependencies: _DependencyKeys
    let site: SiteLiteral
    /// Reads the wrapped value, then the dependencies, and makes the wrapper.
    let factory: _AnyFactory
    /// The module that registered it (see ``Registration/module``).
    let module: UInt16
    /// As ``Registration/serial``: which `decorate` call this is.
    var serial: Int32 = -1

    var keyID: ObjectIdentifier { ObjectIdentifier(key) }
}

/// The value of `Key` after its first `Stage` decorators: stage 0 is the value its provider makes,
/// before any decorator. The last stage is `Key` itself, which is what dependents receive.
@usableFromInline
enum DecoratedStage<Key: ServiceKey, Stage: _Ordinal>: ServiceKey, DecoratedStageKey {
    @usableFromInline
    typealias Value = Key.Value

    @usableFromInline
    static var serviceName: String {
        Stage.value == 0 ? "\(Key.serviceName) (undecorated)" : "\(Key.serviceName) (decorator \(Stage.value))"
    }

    /// The key whose stage this is.
    static var decoratedKey: any ServiceKey.Type { Key.self }

    /// The key of another stage of the same key.
    static func stage(_ stage: Int) -> any ServiceKey.Type {
        func key<Other: _Ordinal>(_: Other.Type) -> any ServiceKey.Type { DecoratedStage<Key, Other>.self }
        return key(ordinal(stage))
    }
}

/// A stage of a decorated key (``DecoratedStage``), seen without its parameters.
protocol DecoratedStageKey {
    /// The key whose stage this is.
    static var decoratedKey: any ServiceKey.Type { get }
}
