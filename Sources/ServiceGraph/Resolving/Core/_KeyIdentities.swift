/// Per slot, the identity of its key (the bits of its metatype): the one copy a built graph keeps.
///
/// A class, so that what must outlive the graph's services (an error's message, the key names made
/// on first use) holds the identities without holding the graph; the core reads them on the resolve
/// path through the pointer ``elements``, valid while the core holds this object.
///
/// `@unchecked Sendable`: the buffer is written only in `init`.
final class _KeyIdentities: @unchecked Sendable {
    /// The identities, in slot order.
    let elements: UnsafeMutableBufferPointer<UInt>

    init(_ identities: [UInt]) {
        // Safety: allocated and fully initialized here, freed in `deinit`, never written after.
        elements = .allocate(capacity: identities.count)
        _ = elements.initialize(from: identities)
    }

    deinit {
        elements.deallocate()
    }

    var count: Int { elements.count }

    /// The key of `slot` (a dynamic cast: for diagnostics, not for resolving).
    func key(at slot: Int) -> any ServiceKey.Type { Self.key(identity: elements[slot]) }

    /// Every key, in slot order.
    var keys: [any ServiceKey.Type] { elements.map(Self.key(identity:)) }

    /// The key whose identity is `identity`. Every identity in a graph is a `ServiceKey` type's, so the
    /// cast cannot fail.
    static func key(identity: UInt) -> any ServiceKey.Type {
        // Safety: an identity is the bits of a metatype (`ObjectIdentifier(key)`), one word.
        unsafeBitCast(identity, to: Any.Type.self) as! any ServiceKey.Type
    }
}
