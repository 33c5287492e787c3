//! Typed tables, iterators and savepoints.
//!
//! `cargo run --release -p multiverse-engine --example typed`
//!
//! A `TableDefinition<K, V>` names a table and its Rust key and value types;
//! the `TypedTable` it gives encodes keys so that their bytes sort as the
//! values do (a tuple sorts like the tuple), so ranges and prefixes follow
//! the types' order. A savepoint lets a transaction undo part of its work
//! and go on.

use multiverse::{Database, Error, IndexKind, Isolation, Options, TableDefinition};

/// An order line's key: (customer, order number, line number).
type LineKey = (String, u32, u16);

/// Order lines, with (item, quantity).
const LINES: TableDefinition<LineKey, (String, u32)> = TableDefinition::new("order_lines");

fn main() -> Result<(), Error> {
    let db = Database::new(Options::new())?;
    // An ordered index: iterators and prefixes need one (a hash index would
    // be refused at compile time).
    let lines = LINES.create(&db, IndexKind::Ordered)?;

    db.run(Isolation::Serializable, |t| {
        lines.insert(t, ("ada", 1, 1), ("tea", 2))?;
        lines.insert(t, ("ada", 1, 2), ("scones", 6))?;
        lines.insert(t, ("ada", 2, 1), ("jam", 1))?;
        lines.insert(t, ("bob", 1, 1), ("coffee", 1))?;
        lines.insert(t, ("cy", 7, 1), ("tea", 3))
    })?;

    let mut t = db.begin(Isolation::Serializable)?;

    // Every row, in key order: customer, then order, then line. A range
    // with no ends (`..`) names no key, so the key type is spelled out.
    println!("all order lines:");
    for row in lines.iter(&mut t, ..)? {
        let ((customer, order, line), (item, qty)) = row?;
        println!("  {customer:<4} order {order} line {line}: {qty} x {item}");
    }

    // A prefix of the key: one customer's lines, or one of their orders.
    let ada: Vec<_> = lines.iter_prefix(&mut t, ("ada".to_string(),))?.collect::<Result<_, _>>()?;
    println!("ada has {} lines", ada.len());
    let order_1 = lines.iter_prefix(&mut t, ("ada".to_string(), 1u32))?.count();
    println!("ada's order 1 has {order_1} lines");

    // A range, walked from its high end: the last line of the customers
    // from "b" on.
    let last = lines.iter(&mut t, ("b".to_string(), 0u32, 0u16)..)?.next_back().transpose()?;
    println!("the last line: {last:?}");

    // A savepoint: change an order, then think better of part of it.
    let before_changes = t.savepoint()?;
    lines.update(&mut t, ("ada", 1, 1), ("tea", 3))?;
    let after_first_change = t.savepoint()?;
    lines.insert(&mut t, ("ada", 1, 3), ("cream", 1))?;
    lines.insert(&mut t, ("ada", 1, 4), ("butter", 1))?;
    lines.delete(&mut t, ("ada", 2, 1))?;
    println!("with the changes, ada has {} lines", lines.iter_prefix(&mut t, ("ada".to_string(),))?.count());

    // Undo everything after the second savepoint: the inserts and the delete.
    t.rollback_to(&after_first_change)?;
    println!(
        "rolled back to the second savepoint: ada has {} lines, line (ada, 1, 1) is {:?}",
        lines.iter_prefix(&mut t, ("ada".to_string(),))?.count(),
        lines.get(&mut t, ("ada", 1, 1))?
    );
    assert_eq!(lines.get(&mut t, ("ada", 1, 1))?, Some(("tea".to_string(), 3)));
    assert_eq!(lines.get(&mut t, ("ada", 1, 3))?, None);

    // A savepoint stays usable after a rollback; rolling back to an earlier
    // one undoes the update too.
    t.rollback_to(&before_changes)?;
    assert_eq!(lines.get(&mut t, ("ada", 1, 1))?, Some(("tea".to_string(), 2)));
    println!("rolled back to the first savepoint: (ada, 1, 1) is {:?}", lines.get(&mut t, ("ada", 1, 1))?);
    t.commit()?;

    // What a later transaction sees: the rows as first written.
    let total: u32 = db.run(Isolation::Snapshot, |t| {
        lines.iter(t, ..)?.map(|row| row.map(|(_, (_, qty))| qty)).sum::<Result<u32, _>>()
    })?;
    println!("items ordered in all: {total}");
    assert_eq!(total, 2 + 6 + 1 + 1 + 3);
    Ok(())
}
