extension ServiceGraph.Builder {
    /// Numbers each `provide`, `override`, `contribute` and `decorate` call that has no number yet, from
    /// where the last numbering stopped: a ``LiveGraph`` numbers its first builder, then each change
    /// set, so that the next generation's providers tell which of them the current generation had
    /// (same number) and which the change set made (a new one), whatever key a plan files them under.
    mutating func assignSerials() {
        var next = nextSerial
        registrations.assignSerials(from: &next)
        for index in contributions.indices where contributions[index].serial < 0 {
            contributions[index].serial = next
            next += 1
        }
        for index in decorations.indices where decorations[index].serial < 0 {
            decorations[index].serial = next
            next += 1
        }
        nextSerial = next
    }
}
