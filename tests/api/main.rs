//! Black-box tests: the real server on a loopback port, a fresh in-memory embedded store per
//! test, spoken to over HTTP.

mod auth;
mod bad_input;
mod batches;
mod batching;
mod check;
mod counts;
mod engine;
mod examples;
mod farms;
mod faults;
mod field_errors;
mod filters;
mod fuzz;
mod goals;
mod helpers;
mod http;
mod indexes;
mod layers;
mod lifecycle;
mod limits;
mod lists;
mod logs;
mod migrations;
mod nested;
mod network;
mod readme;
mod resolvers;
mod schema;
mod sorting;
mod startup;
mod storm;
mod subscriptions;
mod tools;
mod traces;
