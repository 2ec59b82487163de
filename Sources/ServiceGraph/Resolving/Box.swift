/// A type-erased, immutable holder of one created instance.
///
/// The graph stores instances as boxes so that a typed read is a single unchecked downcast
/// (`unsafeDowncast(box, to: Box<Key.Value>.self)`) rather than a dynamic cast from `any Sendable`.
/// The builder guarantees by construction that the box in a key's slot holds that key's `Value`.
@usableFromInline
class AnyBox: @unchecked Sendable {
    @usableFromInline
    init() {}
}

/// The box for a `Value`. Immutable, so sharing it across tasks is safe.
@usableFromInline
final class Box<Value: Sendable>: AnyBox, @unchecked Sendable {
    @usableFromInline
    let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}
