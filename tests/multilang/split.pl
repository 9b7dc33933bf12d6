#!/usr/bin/perl
# A split-sentence bolt in Perl speaking Storm's multilang protocol directly (a test fixture):
# JSON messages each followed by a line "end"; the handshake writes the pid file and answers
# {"pid"}; heartbeats get sync; each tuple's words are emitted anchored to it, asking for the
# task ids (read back before going on), then the tuple is acked.
use strict;
use warnings;
use JSON::PP;

$| = 1;
my $json = JSON::PP->new->utf8->canonical;
my @pending;  # messages read while waiting for task ids

sub read_msg {
    my @lines;
    while (my $line = <STDIN>) {
        chomp $line;
        return $json->decode(join("\n", @lines)) if $line eq "end";
        push @lines, $line;
    }
    exit 0;  # the host went away
}

sub send_msg { print $json->encode($_[0]), "\nend\n"; }

sub next_command {
    return shift @pending if @pending;
    while (1) {
        my $msg = read_msg();
        return $msg if ref $msg eq 'HASH';
    }
}

sub task_ids {
    while (1) {
        my $msg = read_msg();
        return $msg if ref $msg eq 'ARRAY';
        push @pending, $msg;
    }
}

my $setup = read_msg();
open(my $fh, '>', "$setup->{pidDir}/$$") or die "pid file: $!";
close $fh;
send_msg({ pid => $$ + 0 });

while (1) {
    my $tup = next_command();
    if ($tup->{stream} eq '__heartbeat' && $tup->{task} == -1) {
        send_msg({ command => 'sync' });
        next;
    }
    for my $word (split / /, $tup->{tuple}[0]) {
        send_msg({ command => 'emit', anchors => [$tup->{id}], tuple => [$word] });
        my $tasks = task_ids();
        send_msg({ command => 'log', msg => "no task for $word", level => 4 }) unless @$tasks;
    }
    send_msg({ command => 'ack', id => $tup->{id} });
}
