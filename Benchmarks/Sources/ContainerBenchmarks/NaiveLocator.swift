import Synchronization

/// The service locator of the usual blog post: a locked dictionary from type to instance or factory.
///
/// Self-contained: `Scripts/code_size.py` copies this file into a stand-alone program.
final class NaiveLocator: Sendable {
    private enum Entry {
        case instance(any Sendable)
        case factory(@Sendable (NaiveLocator) -> any Sendable)
    }

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    func register<T: Sendable>(_ type: T.Type, instance: T) {
        entries.withLock { $0[ObjectIdentifier(type)] = .instance(instance) }
    }

    func register<T: Sendable>(_ type: T.Type, factory: @escaping @Sendable (NaiveLocator) -> T) {
        entries.withLock { $0[ObjectIdentifier(type)] = .factory(factory) }
    }

    func resolve<T: Sendable>(_ type: T.Type = T.self) -> T {
        let entry = entries.withLock { $0[ObjectIdentifier(type)] }
        switch entry {
        case .instance(let instance): return instance as! T
        case .factory(let factory): return factory(self) as! T
        case nil: fatalError("\(T.self) is not registered")
        }
    }
}
