/// The values an iterative resolution has made and not yet handed to a factory: a stack of boxes, the
/// dependencies of the factory being called on top, in declaration order.
///
/// See ``ResolutionPlan/valueIteratively(at:in:)``. Lives only as long as that call.
@usableFromInline
final class PreparedValues {
    var boxes: [AnyBox] = []
    /// The next box to hand out.
    var cursor = 0

    init() {}

    /// The next prepared value of the factory being called.
    @usableFromInline
    func next() -> AnyBox {
        defer { cursor += 1 }
        return boxes[cursor]
    }
}
