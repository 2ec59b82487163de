/// Which synchronous forms of factories with arguments (``ArgumentFactory/Synchronous``) a list of
/// registrations takes away.
///
/// A `provide` or `override` given a synchronous closure registers both forms of its factory, paired
/// (``Registration/isPairedForm``). Any other provider of the asynchronous form makes a function the
/// synchronous form knows nothing of, so it takes the synchronous form away rather than leave two
/// forms that make different things:
/// - an override of the asynchronous form that is not paired (an asynchronous closure, or an override
///   of the function itself) takes it away, unless a later override gives the form again: per form,
///   the last override touching it decides (an override of the synchronous form, paired or not, gives
///   it);
/// - in a child graph, the child's own provider of the asynchronous form that is not paired takes away
///   the form the child inherited from its parent.
struct WithdrawnForms {
    /// Per synchronous form's key: whether the last override touching it takes it away.
    private var lastOverrideWithdraws: [ObjectIdentifier: Bool] = [:]
    /// The keys of inherited synchronous forms the child's own providers take away.
    private var withdrawnInherited: Set<ObjectIdentifier> = []

    /// Whether nothing is taken away (most lists: the plan then asks nothing per registration).
    var isEmpty: Bool { lastOverrideWithdraws.isEmpty && withdrawnInherited.isEmpty }

    /// The synchronous forms provided or overridden on their own (not paired), in registration order,
    /// among the overrides and a child graph's own providers (see ``GraphPlan/unpairedForms``).
    private(set) var unpaired: [Registration] = []

    /// Reads `registrations` in order. The form of a registration the builder did not note (an
    /// override, or a child graph's own provider, given the function itself) is asked of its key type:
    /// a dynamic cast each, for the few registrations that may take a form away.
    init(_ registrations: RegistrationList) {
        let inChild = registrations.mayHaveInherited
        for index in registrations.indices {
            let noted = registrations[index].argumentFactoryForm
            let isOverride = registrations[index].isOverride
            let mayBeUnnoted = isOverride || inChild && !registrations[index].isInherited
            guard noted != .none || mayBeUnnoted else { continue }
            let registration = registrations[index]
            let form = noted != .none ? noted : _ArgumentFactoryForm(of: registration.key)
            switch form {
            case .synchronous where !registration.isPairedForm:
                unpaired.append(registration)
            case .synchronous where isOverride:
                lastOverrideWithdraws[registration.keyID] = false
            case .asynchronous where !registration.isPairedForm:
                // Cold: a dynamic cast per unpaired asynchronous form, for the key of its other form.
                guard let other = (registration.key as? any ArgumentFactoryKey.Type)?.otherForm else { continue }
                if isOverride {
                    lastOverrideWithdraws[ObjectIdentifier(other)] = true
                } else if !registration.isInherited {
                    withdrawnInherited.insert(ObjectIdentifier(other))
                }
            default:
                continue
            }
        }
    }

    /// Whether the provider `registration` (not an override) is a synchronous form taken away.
    func takesAway(_ registration: Registration) -> Bool {
        guard !isEmpty, registration.isPairedSynchronousForm else { return false }
        return lastOverrideWithdraws[registration.keyID] == true
            || registration.isInherited && withdrawnInherited.contains(registration.keyID)
    }

    /// Whether the override `registration` is of a synchronous form a later override takes away.
    func takesAway(override registration: Registration) -> Bool {
        guard !isEmpty, registration.isPairedSynchronousForm else { return false }
        return lastOverrideWithdraws[registration.keyID] == true
    }
}

extension GraphPlan {
    /// The slots of the two forms one synchronous closure registered, each mapped to the other's: the
    /// paired synchronous form (``Registration/isPairedSynchronousForm``) whose asynchronous form in
    /// the plan is paired too and was registered at the same site. Validation reports the pair's
    /// problems once, on the asynchronous form; lint counts the pair as one factory.
    static func pairedForms(of providers: RegistrationList, table: KeyTable) -> [Int: Int] {
        guard providers.mayHaveArgumentFactories else { return [:] }
        var pairs: [Int: Int] = [:]
        for slot in providers.indices where providers[slot].isPairedSynchronousForm {
            guard let form = (providers[slot].key as? any ArgumentFactoryKey.Type)?.otherForm,
                let sibling = table.slot(for: ObjectIdentifier(form)),
                providers[sibling].isPairedForm,
                providers[sibling].site.isSame(as: providers[slot].site)
            else { continue }
            pairs[slot] = sibling
            pairs[sibling] = slot
        }
        return pairs
    }

    /// The providers of the synchronous forms of the graph's factories with arguments that are not
    /// paired with them: given by hand, beside a factory the builder registered (an unpaired override
    /// or child's own provider is found by ``WithdrawnForms``). Only the factories the builder noted
    /// are looked at, so a graph without any asks nothing.
    static func unpairedForms(of providers: RegistrationList, table: KeyTable) -> [Registration] {
        guard providers.mayHaveArgumentFactories else { return [] }
        var unpaired: [Registration] = []
        for slot in providers.indices where providers[slot].argumentFactoryForm == .asynchronous {
            guard let form = (providers[slot].key as? any ArgumentFactoryKey.Type)?.otherForm,
                let twin = table.slot(for: ObjectIdentifier(form)),
                !providers[twin].isPairedForm, !providers[twin].isOverride
            else { continue }
            unpaired.append(providers[twin])
        }
        return unpaired
    }

    /// Whether `slot` is a synchronous form whose problems validation reports on its asynchronous form.
    func isReportedWithItsPair(_ slot: Int) -> Bool {
        !pairedForms.isEmpty && pairedForms[slot] != nil && providers[slot].argumentFactoryForm == .synchronous
    }
}
