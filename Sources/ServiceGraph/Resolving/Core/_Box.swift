/// A type-erased, immutable holder of one created instance.
///
/// The graph stores instances as boxes so that a typed read is a single unchecked downcast
/// (``_unsafeValue(as:)``) rather than a dynamic cast from `any Sendable`. The builder guarantees by
/// construction that the box in a key's slot holds that key's `Value`.
@usableFromInline
class _AnyBox: @unchecked Sendable {
    @usableFromInline
    init() {}
}

/// The box for a `Value`. Immutable, so sharing it across tasks is safe.
@usableFromInline
final class _Box<Value: Sendable>: _AnyBox, @unchecked Sendable {
    @usableFromInline
    let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}

extension _AnyBox {
    /// The instance in this box, which holds a `Value` (checked in debug builds only).
    @inlinable
    @inline(__always)
    func _unsafeValue<Value: Sendable>(as type: Value.Type) -> Value {
        // Safety: every box is made by its slot's `_Factory<Value>`, and read as that slot's `Value`.
        _unsafeDowncastChecked(self, to: _Box<Value>.self).value
    }
}

/// `unsafeDowncast`, with the dynamic type checked in debug builds (see ``_internalInvariant(_:_:file:line:)``).
@inlinable
@inline(__always)
func _unsafeDowncastChecked<T: AnyObject>(_ object: AnyObject, to type: T.Type) -> T {
    _internalInvariant(object is T, "\(Swift.type(of: object)) is not a \(T.self)")
    return unsafeDowncast(object, to: T.self)
}

/// Checks an invariant of the core in debug builds, the way swift-collections checks its own under
/// `COLLECTIONS_INTERNAL_CHECKS`: `SERVICEGRAPH_INTERNAL_CHECKS` is defined in debug builds (see
/// `Package.swift`); release builds compile the check away.
@inlinable
@inline(__always)
func _internalInvariant(
    _ condition: @autoclosure () -> Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    #if SERVICEGRAPH_INTERNAL_CHECKS
    precondition(condition(), "ServiceGraph internal invariant: \(message())", file: file, line: line)
    #endif
}
