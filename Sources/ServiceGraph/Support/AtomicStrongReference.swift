import Synchronization

/// A strong reference that many threads load, and a writer replaces, without a lock.
///
/// Loading a class reference from an atomic word and then retaining it races with a writer that
/// replaces the word and releases the old object in between. This closes the window with a split
/// reference count, the technique swift-atomics uses for its strong references: next to the pointer,
/// in the same double word, a count of the loads in flight and a version. A load announces itself
/// (one compare-and-exchange), retains the object, and withdraws (another); a writer that replaces
/// the object first retains it once for each load in flight (and a margin for loads that announce
/// themselves meanwhile), and every load that finds the version changed gives its share back.
///
/// Lock-free: a thread that stops in the middle of a load holds up no other. Two double-word atomic
/// operations per load, on the holder's cache line.
struct AtomicStrongReference<Object: AnyObject>: ~Copyable, @unchecked Sendable {
    private let storage: Atomic<WordPair>

    /// The load count's bits, at the bottom of the second word; the version takes the rest.
    private static var readerBits: Int { Int.bitWidth / 4 }
    private static var readerMask: UInt { (1 &<< UInt(readerBits)) &- 1 }
    /// How many loads beyond those in flight a writer covers, so that a few announcing themselves
    /// while it retains do not make it start over.
    private static var window: Int { 20 }

    init(_ object: Object) {
        let raw = UInt(bitPattern: Unmanaged.passRetained(object).toOpaque())
        storage = Atomic(WordPair(first: raw, second: 0))
    }

    deinit {
        let word = storage.load(ordering: .acquiring)
        // Safety: no load is in flight while the holder is destroyed; the storage's own retain is given back.
        Self.object(of: word).release()
    }

    /// The object, retained.
    func load() -> Object {
        let announced = startLoading()
        // Safety: while this load is announced, the writer has retained the object on its behalf.
        let object = Self.object(of: announced).takeUnretainedValue()
        finishLoading(announced)
        return object
    }

    /// Replaces the object with `new`, and returns the one it held.
    func exchange(_ new: Object) -> Object {
        let newRaw = UInt(bitPattern: Unmanaged.passRetained(new).toOpaque())
        var old = startLoading()
        while true {
            let desired = WordPair(first: newRaw, second: (Self.version(of: old) &+ 1) &<< UInt(Self.readerBits))
            let object = Self.object(of: old)
            var covered = Self.readers(of: old) + Self.window
            for _ in 0..<covered { _ = object.retain() }
            while true {
                let (exchanged, current) = storage.compareExchange(
                    expected: old,
                    desired: desired,
                    ordering: .acquiringAndReleasing
                )
                if exchanged {
                    // Each other load in flight gives back one share when it finds the version changed;
                    // this call keeps one (it was a load in flight itself), returned with the storage's.
                    for _ in 0..<(covered - Self.readers(of: current) + 1) { object.release() }
                    return object.takeRetainedValue()
                }
                if Self.version(of: current) != Self.version(of: old) {
                    // Another writer replaced it first, covering this call's load: give back its share too.
                    for _ in 0..<(covered + 1) { object.release() }
                    old = startLoading(from: current)
                    break
                }
                // Loads came or went: cover any beyond the margin, and try again.
                let readers = Self.readers(of: current)
                if readers > covered {
                    for _ in covered..<(readers + Self.window) { _ = object.retain() }
                    covered = readers + Self.window
                }
                old = current
            }
        }
    }

    /// Announces a load: returns the double word with this load counted.
    private func startLoading(from hint: WordPair? = nil) -> WordPair {
        var old = hint ?? storage.load(ordering: .relaxed)
        while true {
            let new = WordPair(first: old.first, second: old.second &+ 1)
            let (exchanged, current) = storage.weakCompareExchange(
                expected: old,
                desired: new,
                successOrdering: .acquiring,
                failureOrdering: .relaxed
            )
            if exchanged { return new }
            old = current
        }
    }

    /// Withdraws a load announced as `announced`; when a writer replaced the object meanwhile, gives
    /// back the share it took for this load.
    private func finishLoading(_ announced: WordPair) {
        var current = announced
        while true {
            let (exchanged, found) = storage.weakCompareExchange(
                expected: current,
                desired: WordPair(first: current.first, second: current.second &- 1),
                successOrdering: .acquiringAndReleasing,
                failureOrdering: .relaxed
            )
            if exchanged { return }
            guard found.first == announced.first, Self.version(of: found) == Self.version(of: announced) else {
                Self.object(of: announced).release()
                return
            }
            current = found
        }
    }

    private static func object(of word: WordPair) -> Unmanaged<Object> {
        // Safety: the first word is always the address of a retained `Object` (never 0).
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word.first).unsafelyUnwrapped)
    }

    private static func readers(of word: WordPair) -> Int { Int(word.second & readerMask) }

    private static func version(of word: WordPair) -> UInt { word.second &>> UInt(readerBits) }
}
