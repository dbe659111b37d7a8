//! fridge-proto (under construction).
