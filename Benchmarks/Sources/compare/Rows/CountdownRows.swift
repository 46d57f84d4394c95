/// `countdown_tick_100k`: ns per countdown per tick (serial only).
enum CountdownRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["countdown_tick_100k"]) { _ in
            var row = Row(name: "countdown_tick_100k", unit: "ns/countdown/tick")
            row.notes.append("n/a: CountdownManager is not merged into this branch yet")
            return [row]
        }
    ]
}
