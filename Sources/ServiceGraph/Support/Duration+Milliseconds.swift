extension Duration {
    /// The duration in whole microseconds, truncated: the unit the build records and the dumps print.
    ///
    /// The build converts one per service: under 9.2 seconds the attoseconds fit an `Int64`, whose
    /// division by a constant is a multiplication, where `components` divides 128-bit integers.
    var wholeMicroseconds: Int64 {
        let attoseconds = self.attoseconds
        if let small = Int64(exactly: attoseconds) { return small / 1_000_000_000_000 }
        return Int64(clamping: attoseconds / 1_000_000_000_000)
    }

    /// The duration in milliseconds with `decimals` (at most 3) decimals, truncated: `12.34`.
    func millisecondDigits(decimals: Int) -> String {
        precondition((0...3).contains(decimals), "at most three decimals: the unit is a microsecond")
        var scale: Int64 = 1
        for _ in 0..<(3 - decimals) { scale *= 10 }
        let units = wholeMicroseconds / scale
        var divisor: Int64 = 1
        for _ in 0..<decimals { divisor *= 10 }
        guard decimals > 0 else { return String(units) }
        let fraction = String(units % divisor)
        return "\(units / divisor)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    /// Milliseconds with two decimals, for dumps, reports and events: `12.34 ms`.
    var milliseconds: String { millisecondDigits(decimals: 2) + " ms" }
}
