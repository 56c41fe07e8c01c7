# A CPU-bound Ruby program with a known call chain, for the Ruby stack tests and benchmark.
# Runs on every CRuby from 2.5 on, core library only.
#
#   ruby_chain.rb chain SECONDS    <main> -> Worker.run (a class method) -> Worker#crunch ->
#                                  Integer#times (a C function) -> block in Worker#crunch ->
#                                  Worker#recurse x6 -> Worker#leaf, the leaf spinning
#   ruby_chain.rb threads SECONDS  two threads: Alpha.spin -> Alpha.leaf and, inside a Fiber,
#                                  Beta.spin -> Beta.leaf, each spinning on its own
#   ruby_chain.rb ractors SECONDS  the same two chains, Alpha's in the main ractor, Beta's in a
#                                  second one (each ractor has its own VM lock)
#   ruby_chain.rb caller           prints Ruby's own backtrace at the leaf (caller_locations)
# Line numbers the tests look for are marked with "# LINE:NAME".

class Worker
  def self.run(seconds, &probe)
    w = new
    finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    w.crunch(&probe) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish # LINE:run
  end

  def crunch(&probe)
    1.times { recurse(5, &probe) } # LINE:crunch
  end

  def recurse(depth, &probe)
    return leaf(&probe) if depth.zero? # LINE:recurse_leaf
    recurse(depth - 1, &probe) # LINE:recurse
  end

  def leaf # LINE:leaf_def
    return yield if block_given?
    s = 0
    i = 0
    while i < 20000
      s += i * i # LINE:leaf
      i += 1
    end
    s
  end
end

module Alpha
  def self.leaf
    s = 0
    i = 0
    while i < 20000
      s += i ^ 7
      i += 1
    end
    s
  end

  def self.spin(finish)
    leaf while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
  end
end

module Beta
  def self.leaf
    s = 1
    i = 0
    while i < 20000
      s = (s * 3 + i) % 1000003
      i += 1
    end
    s
  end

  def self.spin(finish)
    leaf while Process.clock_gettime(Process::CLOCK_MONOTONIC) < finish
  end
end

mode = ARGV[0]
seconds = ARGV[1].to_f
if mode == "caller"
  Worker.run(0.001) { puts caller_locations(0).map { |l| "#{l.label}:#{l.lineno}" }; exit 0 }
  exit 1
end
$stdout.puts "started"
$stdout.flush
if mode == "chain"
  Worker.run(seconds) # LINE:main
elsif mode == "threads"
  finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  [Thread.new { Alpha.spin(finish) }, Thread.new { Fiber.new { Beta.spin(finish) }.resume }].each(&:join)
else
  finish = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  $stderr.reopen(File::NULL) # "Ractor is experimental"
  r = Ractor.new(finish) { |f| Beta.spin(f) }
  Alpha.spin(finish)
  r.take
end
