/// The text of a dump, written as UTF-8 bytes into one growing buffer that this object owns.
///
/// Every renderer writes through this, piece by piece, and makes one string at the end: a dump of
/// 100,000 services is millions of small pieces, and appending each to a `String` (or interpolating
/// one first) costs several times more than copying its bytes. Plain byte copies also keep debug
/// builds, where tests dump 100,000 services, fast.
///
/// Raw memory rather than a `[UInt8]`: with an array's uniqueness and bounds checks on every append,
/// the JSON dump of 100,000 services takes 1.6 times as long. The buffer never leaves this object;
/// `count <= capacity` always holds, and every write reserves its room first.
final class DumpText {
    private var base: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int

    /// A buffer for about `capacity` bytes (it grows as needed).
    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deallocate()
    }

    /// The text written so far.
    var string: String {
        String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    func write(_ literal: StaticString) {
        if literal.hasPointerRepresentation {
            write(bytes: literal.utf8Start, count: literal.utf8CodeUnitCount)
        } else {
            write(string: literal.description)
        }
    }

    func write(string: String) {
        var string = string
        string.withUTF8 { utf8 in
            if let bytes = utf8.baseAddress { write(bytes: bytes, count: utf8.count) }
        }
    }

    /// A non-negative number in decimal.
    /// The node of a graph format (DOT, Mermaid) that stands for `dependency`: `s3` for a service's
    /// slot, `m0` for a missing key's position.
    func write(node dependency: GraphDescription.Dependency) {
        switch dependency {
        case .service(let slot):
            write("s")
            write(number: slot)
        case .missing(let position):
            write("m")
            write(number: position)
        }
    }

    func write(number: Int) {
        var divisor = 1
        while divisor <= number / 10 { divisor *= 10 }
        reserve(20)  // the digits of any Int
        while divisor > 0 {
            base[count] = UInt8(truncatingIfNeeded: 0x30 + (number / divisor) % 10)
            count += 1
            divisor /= 10
        }
    }

    /// `string` with the bytes `escapes` replaces replaced.
    func write(_ string: String, escaping escapes: Escapes) {
        var string = string
        string.withUTF8 { utf8 in
            escapes.isEscaped.withUnsafeBufferPointer { isEscaped in
                guard let source = utf8.baseAddress else { return }
                var runStart = 0
                var index = 0
                while index < utf8.count {
                    // Only ASCII bytes are escaped, and an ASCII byte always is a character of its own.
                    if isEscaped[Int(source[index])] {
                        write(bytes: source + runStart, count: index - runStart)
                        write(string: escapes.replacements[Int(source[index])])
                        runStart = index + 1
                    }
                    index += 1
                }
                write(bytes: source + runStart, count: utf8.count - runStart)
            }
        }
    }

    private func write(bytes: UnsafePointer<UInt8>, count length: Int) {
        guard length > 0 else { return }
        reserve(length)
        // Safety: `reserve` made room for `length` bytes after `count`; `bytes` is the caller's
        // borrowed UTF-8, never this buffer.
        UnsafeMutableRawPointer(base + count).copyMemory(from: bytes, byteCount: length)
        count += length
    }

    /// Makes room for `length` more bytes, doubling the buffer as often as needed.
    private func reserve(_ length: Int) {
        guard count + length > capacity else { return }
        var newCapacity = capacity * 2
        while count + length > newCapacity { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        UnsafeMutableRawPointer(newBase).copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }
}

/// The escapes of one dump format: what replaces each ASCII byte that must not appear as it is.
struct Escapes {
    /// By ASCII byte: its replacement, empty for bytes kept as they are.
    let replacements: [String]
    /// By byte: whether it is replaced (never a byte of a non-ASCII character).
    let isEscaped: [Bool]

    /// The escapes `replace` gives, nil for bytes kept.
    init(_ replace: (UInt8) -> String?) {
        replacements = (0..<128).map { replace(UInt8($0)) ?? "" }
        isEscaped = (0..<256).map { $0 < 128 && replace(UInt8($0)) != nil }
    }
}
