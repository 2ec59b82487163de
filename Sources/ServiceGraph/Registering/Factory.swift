/// A provider's factory with its typed parameters erased, so providers of every shape share one list.
///
/// Each `provide` call wraps the user's closure in a thunk that pulls the declared dependencies out of a
/// ``_GraphCore/_UnsafeResolver`` in declaration order and initializes the value at the address it is
/// given. `provide` is inlinable so the thunk is compiled, specialized, in the module that declares the
/// keys: resolving then runs no generic code.
///
/// A plain value, not generic, and the value leaves the thunk through memory rather than as a typed
/// result: providing and building a service then instantiates no generic metadata per value type,
/// which an application's first build would otherwise pay for each of its service types, and a
/// registration allocates at most one object, the thunk's context (none when the compiler
/// specializes the user's closure into the thunk).
///
/// A synchronous factory has one thunk, run on both paths: on the asynchronous path the graph first
/// awaits the dependencies that need it (``_GraphCore/preparedDependencies(of:in:)``) and then calls
/// the same thunk, which reads them from the prepared values. Only an asynchronous factory has an
/// asynchronous thunk, which awaits once, for the factory itself.
@usableFromInline
struct _AnyFactory: Sendable {
    @usableFromInline
    typealias SyncThunk = @Sendable (inout _GraphCore._UnsafeResolver, UnsafeMutableRawPointer) throws -> Void
    @usableFromInline
    typealias AsyncThunk = @Sendable (inout _GraphCore._UnsafeResolver, UnsafeMutableRawPointer) async throws -> Void

    /// Initializes a value at the address it is given. For an asynchronous factory, one that throws
    /// ``ServiceGraphError/Code/requiresAwait`` (a stored closure, not an enum payload, so that calling it
    /// from a borrowed factory takes no retain on the resolve path).
    @usableFromInline
    let makeSynchronously: SyncThunk
    /// The asynchronous thunk of an asynchronous factory; nil for a synchronous one.
    @usableFromInline
    let makeAsynchronously: AsyncThunk?

    /// The layout of the value, to box it.
    @usableFromInline
    let layout: _ValueLayout

    /// Whether the factory hands out an instance another graph owns (a child graph's view of its
    /// parent's singleton), whose hooks that graph runs.
    @usableFromInline
    let isBorrowed: Bool

    /// Whether the factory itself can run without `await`.
    @inlinable
    var isSynchronous: Bool { makeAsynchronously == nil }

    /// A factory of these parts (see `ServiceGraph.Builder._appendRegistration`, which is given them).
    init(
        makeSynchronously: @escaping SyncThunk,
        makeAsynchronously: AsyncThunk?,
        layout: _ValueLayout,
        isBorrowed: Bool
    ) {
        self.makeSynchronously = makeSynchronously
        self.makeAsynchronously = makeAsynchronously
        self.layout = layout
        self.isBorrowed = isBorrowed
    }

    /// The factory of a synchronous provider.
    @inlinable
    init<Value: Sendable>(_ type: Value.Type, makeSynchronously: @escaping SyncThunk) {
        self.makeSynchronously = makeSynchronously
        self.makeAsynchronously = nil
        self.isBorrowed = false
        self.layout = _ValueLayout(of: Value.self)
    }

    /// The factory of an asynchronous provider.
    @inlinable
    init<Value: Sendable>(_ type: Value.Type, makeAsynchronously: @escaping AsyncThunk) {
        self.makeSynchronously = Self.requiresAwait(Value.self)
        self.makeAsynchronously = makeAsynchronously
        self.isBorrowed = false
        self.layout = _ValueLayout(of: Value.self)
    }

    /// A factory that hands out an instance another graph owns (a child graph's view of its parent's
    /// singleton): the owner runs its hooks, so this one reports none.
    init<Value: Sendable>(borrowing read: @escaping @Sendable () -> Value) {
        self.makeSynchronously = { _, address in address.initializeMemory(as: Value.self, to: read()) }
        self.makeAsynchronously = nil
        self.isBorrowed = true
        self.layout = _ValueLayout(of: Value.self)
    }

    /// A factory that asks another graph for an instance it owns and may have to create first (a child
    /// graph's view of a parent's singleton created on first use).
    init<Value: Sendable>(borrowingAsynchronously read: @escaping @Sendable () async throws -> Value) {
        self.makeSynchronously = { _, _ in throw ServiceGraphError._asynchronousFactory(Value.self) }
        self.makeAsynchronously = { _, address in address.initializeMemory(as: Value.self, to: try await read()) }
        self.isBorrowed = true
        self.layout = _ValueLayout(of: Value.self)
    }

    /// The synchronous thunk of an asynchronous factory of `Value`: it throws
    /// ``ServiceGraphError/Code/requiresAwait``.
    @inlinable
    static func requiresAwait<Value: Sendable>(_ type: Value.Type) -> SyncThunk {
        { _, _ in throw ServiceGraphError._asynchronousFactory(Value.self) }
    }

    /// Runs the synchronous factory for a `Value`. Only called when ``isSynchronous`` is true.
    @inlinable
    @inline(__always)
    func make<Value: Sendable>(_ resolver: inout _GraphCore._UnsafeResolver, as type: Value.Type) throws -> Value {
        try withUnsafeTemporaryAllocation(of: Value.self, capacity: 1) { buffer in
            // Safety: the thunk initializes the value, or throws without initializing it.
            let address = buffer.baseAddress.unsafelyUnwrapped
            try makeSynchronously(&resolver, UnsafeMutableRawPointer(address))
            return address.move()
        }
    }

    /// Whether the instance in `stored` has lifecycle hooks this graph may have to run: its dynamic
    /// type adopts ``LifecycleHooks`` and it is not borrowed from another graph.
    /// `answer`: where the test's answer is remembered for the instance's dynamic type (see
    /// ``_ValueLayout/hasHooks``).
    func hasHooks(_ stored: _AnyBox, rememberedIn answer: _HookAnswer? = nil) -> Bool {
        if isBorrowed { return false }
        if layout.isObject {
            // The instance's class read from the reference, where the test below would box it in an
            // `Any` to find it: a request scope's service is tested once per request.
            if let known = answer?.known(for: type(of: stored)) { return known }
            // The reference itself is the value; held unretained for the test (the caller holds it).
            var reference = Unmanaged<AnyObject>.passUnretained(stored)
            return withUnsafePointer(to: &reference) { layout.hasHooks(UnsafeRawPointer($0), answer) }
        }
        return layout.hasHooks(unsafeDowncast(stored, to: _ValueBox.self).valueAddress, answer)
    }

    /// The lifecycle hooks of the instance in `stored`, if its dynamic type adopts ``LifecycleHooks``
    /// and it is not borrowed from another graph (whose hooks that graph runs).
    func hooks(of stored: _AnyBox, rememberedIn answer: _HookAnswer? = nil) -> (any LifecycleHooks)? {
        guard hasHooks(stored, rememberedIn: answer) else { return nil }
        if layout.isObject { return stored as? any LifecycleHooks }
        return layout.hooks(of: unsafeDowncast(stored, to: _ValueBox.self).valueAddress)
    }

    /// Runs the synchronous factory, and holds what it makes as the graph does (see ``_AnyBox``). Only
    /// called when ``isSynchronous`` is true.
    func makeBoxSynchronously(_ resolver: inout _GraphCore._UnsafeResolver) throws -> _AnyBox {
        // Safety: a class instance is one strong reference, as an `_AnyBox` is.
        if layout.isObject { return try make(&resolver, as: _AnyBox.self) }
        let box = _ValueBox.empty(for: layout)
        try makeSynchronously(&resolver, box.valueAddress)
        return box.initialized(with: layout)
    }

    /// Runs the factory, and holds what it makes as the graph does, with a resolver whose
    /// dependencies are prepared: the ones that must be awaited have been, and the factory reads them
    /// without suspending.
    @usableFromInline
    func makeBox(_ resolver: inout _GraphCore._UnsafeResolver) async throws -> _AnyBox {
        guard let makeAsynchronously else { return try makeBoxSynchronously(&resolver) }
        if layout.isObject {
            // Memory that stays put across the suspension.
            let address = UnsafeMutablePointer<_AnyBox>.allocate(capacity: 1)
            defer { address.deallocate() }
            try await makeAsynchronously(&resolver, UnsafeMutableRawPointer(address))
            return address.move()
        }
        let box = _ValueBox.empty(for: layout)
        try await makeAsynchronously(&resolver, box.valueAddress)
        return box.initialized(with: layout)
    }
}
