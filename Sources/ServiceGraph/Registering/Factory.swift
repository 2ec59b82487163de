/// A provider's factory with its typed parameters erased, so providers of every shape share one list.
///
/// Each `provide` call wraps the user's closure in a thunk that pulls the declared dependencies out of a
/// ``_GraphCore/_UnsafeResolver`` in declaration order. `provide` is inlinable so the thunks are
/// compiled, specialized, in the module that declares the keys: resolving then runs no generic code.
@usableFromInline
class _AnyFactory: @unchecked Sendable {
    /// Whether the factory itself can run without `await`.
    @usableFromInline
    let isSynchronous: Bool

    /// Whether the factory hands out an instance another graph owns (a child graph's view of its
    /// parent's singleton), whose hooks that graph runs.
    let isBorrowed: Bool

    @usableFromInline
    init(isSynchronous: Bool, isBorrowed: Bool) {
        self.isSynchronous = isSynchronous
        self.isBorrowed = isBorrowed
    }

    /// The lifecycle hooks of the instance in `box`, if its dynamic type adopts ``LifecycleHooks``.
    func hooks(of box: _AnyBox) -> (any LifecycleHooks)? {
        preconditionFailure("abstract")
    }

    /// Runs the synchronous factory. Only called when ``isSynchronous`` is true.
    func makeBoxSynchronously(_ resolver: inout _GraphCore._UnsafeResolver) throws -> _AnyBox {
        preconditionFailure("abstract")
    }

    /// Runs the factory with a resolver whose dependencies are prepared: the ones that must be awaited
    /// have been, and the factory reads them without suspending.
    func makeBox(_ resolver: inout _GraphCore._UnsafeResolver) async throws -> _AnyBox {
        preconditionFailure("abstract")
    }
}

/// The factory of a provider whose key's value is `Value`. Immutable once made.
///
/// A synchronous factory has one thunk, run on both paths: on the asynchronous path the graph first
/// awaits the dependencies that need it (``_GraphCore/preparedDependencies(of:in:)``) and then calls
/// the same thunk, which reads them from the prepared values. Only an asynchronous factory has an
/// asynchronous thunk, which awaits once, for the factory itself: per registration, the machine code is
/// one specialized synchronous thunk, not a synchronous and an asynchronous one.
@usableFromInline
final class _Factory<Value: Sendable>: _AnyFactory, @unchecked Sendable {
    @usableFromInline
    typealias SyncThunk = @Sendable (inout _GraphCore._UnsafeResolver) throws -> Value
    @usableFromInline
    typealias AsyncThunk = @Sendable (inout _GraphCore._UnsafeResolver) async throws -> Value

    /// The synchronous thunk; for an asynchronous factory, one that throws
    /// ``ServiceGraphError/Code/requiresAwait`` (not optional, so calling it loads one closure).
    @usableFromInline
    let makeSynchronously: SyncThunk
    /// The asynchronous thunk of an asynchronous factory; nil for a synchronous one.
    @usableFromInline
    let makeAsynchronously: AsyncThunk?
    /// `_Box<Value>`, looked up once where the factory is made (specialized, in the module that
    /// provides it) so that boxing an instance does not look up generic metadata again.
    @usableFromInline
    let boxType: _Box<Value>.Type
    /// `$0 as? any LifecycleHooks`, compiled where the factory is made: for a concrete `Value` the
    /// compiler decides the cast statically, instead of a dynamic cast per instance.
    @usableFromInline
    let hooksOf: @Sendable (Value) -> (any LifecycleHooks)?

    /// The factory of a synchronous provider.
    @inlinable
    init(makeSynchronously: @escaping SyncThunk) {
        self.makeSynchronously = makeSynchronously
        self.makeAsynchronously = nil
        self.boxType = _Box<Value>.self
        self.hooksOf = { $0 as? any LifecycleHooks }
        super.init(isSynchronous: true, isBorrowed: false)
    }

    /// The factory of an asynchronous provider.
    @inlinable
    init(makeAsynchronously: @escaping AsyncThunk) {
        self.makeSynchronously = { _ in throw ServiceGraphError._asynchronousFactory(Value.self) }
        self.makeAsynchronously = makeAsynchronously
        self.boxType = _Box<Value>.self
        self.hooksOf = { $0 as? any LifecycleHooks }
        super.init(isSynchronous: false, isBorrowed: false)
    }

    /// A factory that hands out an instance another graph owns (a child graph's view of its parent's
    /// singleton): the owner runs its hooks, so this one reports none.
    init(borrowing read: @escaping @Sendable () -> Value) {
        self.makeSynchronously = { _ in read() }
        self.makeAsynchronously = nil
        self.boxType = _Box<Value>.self
        self.hooksOf = { _ in nil }
        super.init(isSynchronous: true, isBorrowed: true)
    }

    /// Runs the factory with a resolver whose dependencies are prepared (see the type's note).
    @inlinable
    func make(_ resolver: inout _GraphCore._UnsafeResolver) async throws -> Value {
        if let makeAsynchronously {
            return try await makeAsynchronously(&resolver)
        }
        return try makeSynchronously(&resolver)
    }

    override func hooks(of box: _AnyBox) -> (any LifecycleHooks)? {
        hooksOf(box._unsafeValue(as: Value.self))
    }

    override func makeBoxSynchronously(_ resolver: inout _GraphCore._UnsafeResolver) throws -> _AnyBox {
        boxType.init(try makeSynchronously(&resolver))
    }

    override func makeBox(_ resolver: inout _GraphCore._UnsafeResolver) async throws -> _AnyBox {
        boxType.init(try await make(&resolver))
    }
}
