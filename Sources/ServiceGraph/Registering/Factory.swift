/// A provider's factory with its typed parameters erased, so providers of every shape share one list.
///
/// Each `provide` call wraps the user's closure in thunks that pull the declared dependencies out of
/// ``Arguments`` in declaration order. `provide` is inlinable so the thunks are compiled, specialized,
/// in the module that declares the keys: resolving then runs no generic code. The synchronous thunk
/// exists only for synchronous factories.
@usableFromInline
class AnyFactory: @unchecked Sendable {
    @usableFromInline
    init() {}

    /// Whether the factory itself can run without `await`.
    var isSynchronous: Bool { false }

    /// Whether the factory hands out an instance another graph owns (a child graph's view of its
    /// parent's singleton), whose hooks that graph runs.
    var isBorrowed: Bool { false }

    /// The lifecycle hooks of the instance in `box`, if its dynamic type adopts ``LifecycleHooks``.
    func hooks(of box: AnyBox) -> (any LifecycleHooks)? {
        preconditionFailure("abstract")
    }

    /// The dynamic type of the instance in `box`, to remember which types have no hooks.
    func instanceType(of box: AnyBox) -> ObjectIdentifier {
        preconditionFailure("abstract")
    }

    /// Runs the synchronous factory. Only called when ``isSynchronous`` is true.
    func makeBoxNow(_ arguments: inout Arguments) throws -> AnyBox {
        preconditionFailure("abstract")
    }

    /// Runs the factory, awaiting dependencies that need it.
    func makeBox(_ arguments: inout Arguments) async throws -> AnyBox {
        preconditionFailure("abstract")
    }
}

/// The factory of a provider whose key's value is `Value`. Immutable once made.
@usableFromInline
final class Factory<Value: Sendable>: AnyFactory, @unchecked Sendable {
    @usableFromInline
    typealias SyncThunk = @Sendable (inout Arguments) throws -> Value
    @usableFromInline
    typealias AsyncThunk = @Sendable (inout Arguments) async throws -> Value

    /// The synchronous thunk; for an asynchronous factory, one that throws
    /// ``ServiceGraphError/Code/requiresAwait`` (not optional, so calling it loads one closure).
    @usableFromInline
    let makeNow: SyncThunk
    @usableFromInline
    let hasSynchronousFactory: Bool
    @usableFromInline
    let make: AsyncThunk
    /// `Box<Value>`, looked up once where the factory is made (specialized, in the module that
    /// provides it) so that boxing an instance does not look up generic metadata again.
    @usableFromInline
    let boxType: Box<Value>.Type
    /// `$0 as? any LifecycleHooks`, compiled where the factory is made: for a concrete `Value` the
    /// compiler decides the cast statically, instead of a dynamic cast per instance.
    @usableFromInline
    let hooksOf: @Sendable (Value) -> (any LifecycleHooks)?
    /// See ``AnyFactory/isBorrowed``.
    @usableFromInline
    let borrows: Bool

    @inlinable
    init(makeNow: SyncThunk?, make: @escaping AsyncThunk) {
        self.makeNow = makeNow ?? { _ in throw ServiceGraphError.asynchronousFactory(Value.self) }
        self.hasSynchronousFactory = makeNow != nil
        self.make = make
        self.boxType = Box<Value>.self
        self.hooksOf = { $0 as? any LifecycleHooks }
        self.borrows = false
    }

    /// A factory that hands out an instance another graph owns (a child graph's view of its parent's
    /// singleton): the owner runs its hooks, so this one reports none.
    init(borrowing read: @escaping @Sendable () -> Value) {
        self.makeNow = { _ in read() }
        self.hasSynchronousFactory = true
        self.make = { _ in read() }
        self.boxType = Box<Value>.self
        self.hooksOf = { _ in nil }
        self.borrows = true
    }

    override func hooks(of box: AnyBox) -> (any LifecycleHooks)? {
        hooksOf(unsafeDowncast(box, to: Box<Value>.self).value)
    }

    override func instanceType(of box: AnyBox) -> ObjectIdentifier {
        ObjectIdentifier(type(of: unsafeDowncast(box, to: Box<Value>.self).value) as Any.Type)
    }

    override var isSynchronous: Bool { hasSynchronousFactory }

    override var isBorrowed: Bool { borrows }

    override func makeBoxNow(_ arguments: inout Arguments) throws -> AnyBox {
        boxType.init(try makeNow(&arguments))
    }

    override func makeBox(_ arguments: inout Arguments) async throws -> AnyBox {
        boxType.init(try await make(&arguments))
    }
}
