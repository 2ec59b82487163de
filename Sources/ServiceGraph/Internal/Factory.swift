/// A provider's factory with its typed parameters erased, so providers of every shape share one list.
///
/// Each `provide` call wraps the user's closure in two thunks that pull the declared dependencies out
/// of ``Arguments`` in declaration order. The synchronous thunk exists only for synchronous factories.
class AnyFactory: @unchecked Sendable {
    /// Whether the factory itself can run without `await`.
    var isSynchronous: Bool { false }

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
final class Factory<Value: Sendable>: AnyFactory, @unchecked Sendable {
    typealias SyncThunk = @Sendable (inout Arguments) throws -> Value
    typealias AsyncThunk = @Sendable (inout Arguments) async throws -> Value

    let makeNow: SyncThunk?
    let make: AsyncThunk

    init(makeNow: SyncThunk?, make: @escaping AsyncThunk) {
        self.makeNow = makeNow
        self.make = make
    }

    override var isSynchronous: Bool { makeNow != nil }

    override func makeBoxNow(_ arguments: inout Arguments) throws -> AnyBox {
        Box(try makeNow!(&arguments))
    }

    override func makeBox(_ arguments: inout Arguments) async throws -> AnyBox {
        Box(try await make(&arguments))
    }
}
