import Synchronization

/// A created instance as the graph holds it: the instance itself when its type is a class (no box,
/// no allocation beyond the instance), or else a ``_ValueBox`` holding it.
///
/// Which of the two is decided by the value type alone (``_ValueLayout/isObject``, `Value.self is
/// AnyObject.Type`), the same test on the writing and the reading side, so a read needs no flag: in
/// specialized code the test is a constant. Read with ``_unsafeValue(of:as:)``.
@usableFromInline
typealias _AnyBox = any AnyObject & Sendable

/// The instance held in `stored`, a `Value` (checked in debug builds only for a box).
@inlinable
@inline(__always)
func _unsafeValue<Value: Sendable>(of stored: _AnyBox, as type: Value.Type) -> Value {
    if Value.self is AnyObject.Type {
        // Safety: a class instance is held as itself; one strong reference either way.
        return unsafeBitCast(stored, to: Value.self)
    }
    return unsafeDowncast(stored, to: _ValueBox.self)._unsafeValue(as: Value.self)
}

/// A type-erased, immutable holder of one created value that is not a class instance, the value
/// stored in the object's own tail memory.
///
/// One non-generic class for every value type: a generic `_Box<Value>` would make the runtime
/// instantiate a class's metadata for each value type the first time one is boxed, which for an
/// application's first build costs far more than the build itself (thousands of instructions per
/// service type, for the demangling and the class initialization). The box is made from a
/// ``_ValueLayout`` recorded where the key is provided, and keeps only the value's alignment and type
/// (to deinitialize it, and to check reads in debug builds); a typed read is a load at a fixed offset
/// (``_unsafeValue(as:)``). The builder guarantees by construction that the box in a key's
/// slot holds that key's `Value`.
@usableFromInline
final class _ValueBox: @unchecked Sendable {
    // No stored properties: the header and the value are the object's tail memory, laid out by
    // `ManagedBufferPointer` (not a `ManagedBuffer` subclass, which could not be `Sendable`).

    /// What the box needs to release its value.
    @usableFromInline
    struct Header {
        /// The value's type, to deinitialize it; nil until the value is initialized (a factory that
        /// throws leaves an empty box behind, which must not deinitialize anything). Checked on every
        /// read in debug builds.
        @usableFromInline
        var valueType: Any.Type?
        @usableFromInline
        let alignment: Int
    }

    @usableFromInline
    typealias Storage = ManagedBufferPointer<Header, UInt8>

    /// The box's memory.
    @inlinable
    @inline(__always)
    var storage: Storage { Storage(unsafeBufferObject: self) }

    /// An empty box with room for a value of `layout`; ``initialized(with:)`` marks it full.
    @usableFromInline
    static func empty(for layout: _ValueLayout) -> _ValueBox {
        empty(size: layout.size, alignment: layout.alignment)
    }

    /// An empty box with room for a value of `size` bytes aligned to `alignment`.
    @usableFromInline
    static func empty(size: Int, alignment: Int) -> _ValueBox {
        let capacity = size + alignment - 1  // room to align the value
        let storage = Storage(bufferClass: _ValueBox.self, minimumCapacity: capacity) { _, _ in
            Header(valueType: nil, alignment: alignment)
        }
        // Safety: the storage's object is an instance of the class it was made with.
        return unsafeDowncast(storage.buffer, to: _ValueBox.self)
    }

    /// Where the value lives, aligned for it.
    @usableFromInline
    var valueAddress: UnsafeMutableRawPointer {
        storage.withUnsafeMutablePointers { header, elements in
            UnsafeMutableRawPointer(elements).alignedUp(toMultipleOf: header.pointee.alignment)
        }
    }

    /// Marks the value as initialized, so that the box deinitializes it when it is released.
    @usableFromInline
    func initialized(with layout: _ValueLayout) -> _ValueBox {
        initialized(as: layout.valueType)
    }

    /// Records that the box now holds a value of `valueType`, for its deinitializer.
    @usableFromInline
    func initialized(as valueType: Any.Type) -> _ValueBox {
        storage.withUnsafeMutablePointerToHeader { $0.pointee.valueType = valueType }
        return self
    }

    deinit {
        if let valueType = storage.header.valueType { _ValueLayout.destroy(valueType, at: valueAddress) }
        storage.withUnsafeMutablePointerToHeader { _ = $0.deinitialize(count: 1) }
    }
}

extension _ValueBox {
    /// The instance in this box, which holds a `Value` (checked in debug builds only).
    @inlinable
    @inline(__always)
    func _unsafeValue<Value: Sendable>(as type: Value.Type) -> Value {
        // Safety: every box is filled by its slot's factory, and read as that slot's `Value`.
        storage.withUnsafeMutablePointers { header, elements in
            #if SERVICEGRAPH_INTERNAL_CHECKS
            _internalInvariant(
                header.pointee.valueType == Value.self,
                "\(header.pointee.valueType.map { "\($0)" } ?? "an empty box") is not a \(Value.self)"
            )
            #endif
            return UnsafeRawPointer(elements).alignedUp(for: Value.self).assumingMemoryBound(to: Value.self).pointee
        }
    }
}

/// What the graph needs to know of a value type to box it without specialized code: its size and
/// alignment, whether it is a class, and the type itself, through which the rare generic operations
/// (deinitializing a boxed value) run, and the one cast each new instance gets, for lifecycle hooks,
/// compiled where the key is provided (a non-capturing closure: for a concrete value type the compiler
/// decides most of it statically, where a cast from the opened type costs a conformance lookup).
@usableFromInline
struct _ValueLayout: Sendable {
    // Size and alignment in 32 bits: a registration carries its layout, and moves whenever the builder's
    // list grows.
    @usableFromInline
    let storedSize: UInt32
    @usableFromInline
    let storedAlignment: UInt32
    /// The value's type.
    @usableFromInline
    let valueType: Any.Type
    /// `value is any LifecycleHooks` for the value at an address: the test every new instance gets,
    /// which returns a plain flag (making the existential costs as much again, and is only needed for
    /// the few instances that have hooks: ``hooks(of:)``).
    ///
    /// The test is a conformance lookup in the runtime's table of every conformance of the process, for
    /// a value type too (a conformance may be declared in any module). Given a place to remember the
    /// answer in (one per scoped service, see ``_GraphCore/ScopeLayout``), it is looked up once per
    /// dynamic type: a request scope's service is made once per request, always of the same type.
    @usableFromInline
    let hasHooks: @Sendable (UnsafeRawPointer, _HookAnswer?) -> Bool
    /// Whether `Value` is a class, held as itself rather than in a ``_ValueBox``.
    @usableFromInline
    let isObject: Bool

    @inlinable
    init<Value: Sendable>(of type: Value.Type) {
        storedSize = UInt32(MemoryLayout<Value>.size)
        storedAlignment = UInt32(MemoryLayout<Value>.alignment)
        isObject = Value.self is AnyObject.Type
        valueType = Value.self
        hasHooks = { address, answer in
            let value = address.assumingMemoryBound(to: Value.self)
            guard let answer else { return value.pointee is any LifecycleHooks }
            // A value of a struct or enum is of its static type, remembered under it once tested: found
            // without `as Any`, which boxes a value of more than three words on the heap (an allocation
            // per request scope for a service holding, say, an existential and a logger). The answer
            // remembered is never
            // for an existential type itself (no value's dynamic type is one), nor for an optional (see
            // ``_HookAnswer/hasHooks(_:test:)``), and a class's instance may be of a subclass: those go on
            // to their dynamic type.
            if !(Value.self is AnyObject.Type), let known = answer.known(for: Value.self) { return known }
            // `as Any`: the dynamic type. Here `type(of:)` of an existential `Value` is the existential.
            return answer.hasHooks(Swift.type(of: value.pointee as Any)) { value.pointee is any LifecycleHooks }
        }
    }

    /// A layout of these parts (see `ServiceGraph.Builder._appendRegistration`, which is given them).
    init(
        storedSize: UInt32,
        storedAlignment: UInt32,
        valueType: Any.Type,
        hasHooks: @escaping @Sendable (UnsafeRawPointer, _HookAnswer?) -> Bool,
        isObject: Bool
    ) {
        self.storedSize = storedSize
        self.storedAlignment = storedAlignment
        self.valueType = valueType
        self.hasHooks = hasHooks
        self.isObject = isObject
    }

    @inlinable
    var size: Int { Int(storedSize) }

    @inlinable
    var alignment: Int { Int(storedAlignment) }

    /// Deinitializes the value of type `valueType` at `address`.
    static func destroy(_ valueType: Any.Type, at address: UnsafeMutableRawPointer) {
        func destroy<Value>(_: Value.Type) {
            address.assumingMemoryBound(to: Value.self).deinitialize(count: 1)
        }
        destroy(valueType)
    }

    /// The lifecycle hooks of the value at `address`, if its dynamic type adopts ``LifecycleHooks``
    /// (generic code: called only once ``hasHooks`` said yes).
    func hooks(of address: UnsafeRawPointer) -> (any LifecycleHooks)? {
        func hooks<Value>(_: Value.Type) -> (any LifecycleHooks)? {
            address.assumingMemoryBound(to: Value.self).pointee as? any LifecycleHooks
        }
        return hooks(valueType)
    }
}

/// Where the answer of a ``_ValueLayout/hasHooks`` test is remembered, with the dynamic type it is for:
/// one word, the type's metadata address with the answer in its lowest bit (metadata is aligned), 0
/// before the first test. Racing tests of the same type store the same answer; a test of another type
/// (an existential's or a class's dynamic type varies) looks up and replaces it.
@usableFromInline
struct _HookAnswer {
    let word: UnsafePointer<Atomic<UInt>>

    init(_ word: UnsafePointer<Atomic<UInt>>) {
        self.word = word
    }

    /// Whether `type` adopts ``LifecycleHooks``: remembered, or found by `test` and remembered.
    @usableFromInline
    func hasHooks(_ type: Any.Type, test: () -> Bool) -> Bool {
        if let known = known(for: type) { return known }
        let answer = test()
        // The cast looks inside an optional: the answer is the wrapped value's, which changes from value
        // to value of the one type (nil, then one with hooks), so it is not remembered. (An `AnyHashable`,
        // whose cast looks inside too, is not `Sendable`, and no service's value is one.)
        guard !(type is any ExpressibleByNilLiteral.Type) else { return answer }
        word.pointee.store(UInt(bitPattern: ObjectIdentifier(type)) | (answer ? 1 : 0), ordering: .relaxed)
        return answer
    }

    /// The answer remembered for `type`; nil when none is.
    @usableFromInline
    func known(for type: Any.Type) -> Bool? {
        let known = word.pointee.load(ordering: .relaxed)
        guard known & ~1 == UInt(bitPattern: ObjectIdentifier(type)) else { return nil }
        return known & 1 != 0
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

/// `value`, of a type that is not a class, in a new ``_ValueBox``: a plain seed's box, made in
/// specialized code where the seed is made.
@inlinable
func _boxedPlainValue<Value: Sendable>(_ value: Value) -> _AnyBox {
    let box = _ValueBox.empty(size: MemoryLayout<Value>.size, alignment: MemoryLayout<Value>.alignment)
    box.valueAddress.initializeMemory(as: Value.self, to: value)
    return box.initialized(as: Value.self)
}

/// `value` held as the graph holds a created instance: the instance itself for a class, or else a
/// ``_ValueBox`` (what a factory's thunk makes, for a value made outside the graph: a scope's seed).
func boxedInstance<Value: Sendable>(_ value: Value) -> _AnyBox {
    // Not a ``_ValueLayout``: where `Value` is not known statically (a scope's seed), making its
    // `hasHooks` closure allocates a context for the type.
    if Value.self is AnyObject.Type {
        // Safety: a class instance is one strong reference, as an `_AnyBox` is (`unsafeBitCast` checks
        // the sizes agree).
        return unsafeBitCast(value, to: _AnyBox.self)
    }
    let box = _ValueBox.empty(size: MemoryLayout<Value>.size, alignment: MemoryLayout<Value>.alignment)
    box.valueAddress.initializeMemory(as: Value.self, to: value)
    return box.initialized(as: Value.self)
}
