/// The keys a provider depends on, in declaration order.
///
/// Up to four are kept inline, so a registration made by a fixed-arity `provide` allocates nothing
/// for them: at startup, an allocation per registration costs more than the rest of declaring it.
/// More spill into an array. Each is kept as its bare metatype (one word, where `any ServiceKey.Type`
/// takes two): a registration is copied into the builder's list and from it into a graph's plan, and
/// only diagnostics need the keys as `ServiceKey`s again.
@usableFromInline
struct _DependencyKeys: RandomAccessCollection, Sendable {
    @usableFromInline
    typealias Key = any ServiceKey.Type

    @usableFromInline
    var inline: (Any.Type?, Any.Type?, Any.Type?, Any.Type?)
    /// The keys past the fourth; nil when there are none (an empty array would still cost a call
    /// and a release per registration where `provide` is inlined).
    @usableFromInline
    var spilled: [Any.Type]?
    @usableFromInline
    var count: Int

    @inlinable
    init() {
        inline = (nil, nil, nil, nil)
        spilled = nil
        count = 0
    }

    @inlinable
    init(_ first: Key, _ second: Key? = nil, _ third: Key? = nil, _ fourth: Key? = nil) {
        inline = (first, second, third, fourth)
        spilled = nil
        count = fourth != nil ? 4 : third != nil ? 3 : second != nil ? 2 : 1
    }

    init(_ keys: some Sequence<Key>) {
        self.init()
        for key in keys { append(key) }
    }

    @inlinable
    mutating func append(_ key: Key) {
        switch count {
        case 0: inline.0 = key
        case 1: inline.1 = key
        case 2: inline.2 = key
        case 3: inline.3 = key
        default:
            if spilled == nil { spilled = [] }
            spilled!.append(key)
        }
        count += 1
    }

    @inlinable
    var startIndex: Int { 0 }
    @inlinable
    var endIndex: Int { count }

    /// The key at `position` (a dynamic cast: for diagnostics, not for the build).
    @usableFromInline
    subscript(position: Int) -> Key {
        precondition(position >= 0 && position < count, "dependency index out of range")
        let type: Any.Type
        switch position {
        case 0: type = inline.0.unsafelyUnwrapped
        case 1: type = inline.1.unsafelyUnwrapped
        case 2: type = inline.2.unsafelyUnwrapped
        case 3: type = inline.3.unsafelyUnwrapped
        default: type = spilled.unsafelyUnwrapped[position - 4]
        }
        // Every element was appended as a `ServiceKey` type.
        return type as! any ServiceKey.Type
    }

    /// Calls `body` with the identity of each key, in order, reading them in place.
    func forEachIdentity(_ body: (ObjectIdentifier) -> Void) {
        if count > 0 { body(ObjectIdentifier(inline.0.unsafelyUnwrapped)) }
        if count > 1 { body(ObjectIdentifier(inline.1.unsafelyUnwrapped)) }
        if count > 2 { body(ObjectIdentifier(inline.2.unsafelyUnwrapped)) }
        if count > 3 { body(ObjectIdentifier(inline.3.unsafelyUnwrapped)) }
        if count > 4 {
            for key in spilled.unsafelyUnwrapped { body(ObjectIdentifier(key)) }
        }
    }
}
