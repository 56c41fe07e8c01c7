#!/usr/bin/perl
# A CPU-bound Perl program with a known call chain, for tests/integration/test_perl_stacks.py:
# main -> Worker->crunch (a class method) -> recurse x5 -> leaf -> spin. "chain SECONDS" runs it
# in the main thread; "backtrace" prints the chain Carp::longmess gives at spin (the runtime's
# own view) and exits; "threads SECONDS" runs the chain in the main thread and other_spin in an
# ithreads thread (an interpreter of its own) beside it.
use strict;
use warnings;
use Carp ();

$| = 1;
my $mode = shift // 'chain';
my $seconds = shift // 30;
my $end = time + $seconds;

package Worker;

sub crunch {
    my ($class, $n) = @_;
    return main::recurse($n);    # LINE:crunch
}

package main;

sub spin {
    my $x = 0;
    if ($mode eq 'backtrace') {
        print Carp::longmess('at spin'), "\n";
        return 0;
    }
    for my $i (1 .. 20000) { $x += $i * 3 % 7; }    # LINE:spin
    return $x;
}

sub leaf {
    return spin();    # LINE:leaf
}

sub recurse {
    my ($n) = @_;
    return leaf() if $n <= 1;    # LINE:recurse_leaf
    return recurse($n - 1);      # LINE:recurse
}

sub other_spin {
    my $x = 0;
    while (time <= $end) {
        for my $i (1 .. 20000) { $x += $i * 5 % 11; }
    }
    return $x;
}

sub main {
    if ($mode eq 'threads') {
        require threads;
        threads->create(\&other_spin)->detach;
    }
    print "started\n";
    while (1) {
        Worker->crunch(5);    # LINE:main
        last if $mode eq 'backtrace' || time > $end;
    }
}

main();    # LINE:top
