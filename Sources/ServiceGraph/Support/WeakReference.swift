/// A reference that does not keep its object alive.
struct WeakReference<Object: AnyObject & Sendable>: Sendable {
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }
}
