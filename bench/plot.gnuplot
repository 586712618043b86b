# bench/plot.gnuplot - the three charts of "make bench", from bench/plot.sh's
# tables in dir (gnuplot -e "dir='...'"). Sizes are powers of two, so the x
# axes are log 2 with byte labels; values span two to three decades, so the
# y axes of throughput and round trip are log 10 too. Error bars: the sample
# stddev over the repetitions.
set encoding utf8
set terminal pngcairo size 1200,720 font "DejaVu Sans,12" linewidth 1.5
set datafile missing "NaN"
set logscale x 2
set xtics ("64 B" 64, "128 B" 128, "256 B" 256, "512 B" 512, "1 KiB" 1024, "2 KiB" 2048, \
	"4 KiB" 4096, "8 KiB" 8192, "16 KiB" 16384, "32 KiB" 32768, "64 KiB" 65536, \
	"128 KiB" 131072, "256 KiB" 262144) rotate by -35
set grid xtics ytics mytics lc rgb "#dddddd"
set key outside right top box opaque
set bmargin 5
# One colour and point shape per transport, the same in every chart.
set style line 1 lc rgb "#1f77b4" pt 7 ps 1.1   # tcp
set style line 2 lc rgb "#17becf" pt 5 ps 1.1   # tcp-nodelay
set style line 3 lc rgb "#7f7f7f" pt 9 ps 1.2   # unix
set style line 4 lc rgb "#ff7f0e" pt 13 ps 1.2  # redirect-raw
set style line 5 lc rgb "#d62728" pt 7 ps 1.3   # fastlocal
set style line 6 lc rgb "#9467bd" pt 11 ps 1.2  # fastlocal-nodelay
names = "tcp tcp-nodelay unix redirect-raw fastlocal fastlocal-nodelay"

# ---------------------------------------------------------- throughput
set output dir."/throughput.png"
set title "One-way stream throughput against write size (mean ± stddev)"
set xlabel "size of each write() (bytes, log scale)"
set ylabel "throughput (MB/s, log scale)"
set logscale y 10
set format y "%g"
set xrange [48:350000]
plot for [i=1:6] dir."/throughput.dat" using 1:(column(2*i)):(column(2*i+1)) \
	with yerrorlines ls i title word(names, i)

# ---------------------------------------------------------- round trip
set output dir."/rtt.png"
set terminal pngcairo size 1400,760 font "DejaVu Sans,12" linewidth 1.5
set multiplot layout 1,2 title "Ping-pong round trip against message size (mean ± stddev of the runs' means)"
set xrange [48:90000]
set ylabel "round-trip time (µs, log scale)"
set xlabel "message size (bytes, log scale)"
# Below each panel: unpinned round trips climb to the top-left corner.
# (gnuplot does not leave room for rotated tic labels and a key below: the
# bottom margin is set by hand.)
set key outside below center horizontal maxrows 2 box
set bmargin 9
# Unpinned round trips vary as much as they measure (the scheduler puts the
# two threads on one CPU or on two): a bar's low end is cut at a tenth of
# the mean, else the log axis would stretch down to nothing.
lo(c) = column(c) - column(c+1) > column(c) / 10 ? column(c) - column(c+1) : column(c) / 10
set title "pinned: both ends on one CPU"
plot for [i=1:6] dir."/rtt.dat" using 1:(column(2*i)):(lo(2*i)):(column(2*i)+column(2*i+1)) \
	with yerrorlines ls i title word(names, i)
set title "unpinned: scheduler's choice of CPUs"
plot for [i=1:6] dir."/rtt.dat" using 1:(column(12+2*i)):(lo(12+2*i)):(column(12+2*i)+column(13+2*i)) \
	with yerrorlines ls i title word(names, i)
unset multiplot

# ---------------------------------------------------------- speed-up
set terminal pngcairo size 1200,720 font "DejaVu Sans,12" linewidth 1.5
set output dir."/speedup.png"
set title "Throughput speed-up against write size (ratio of means, ± propagated stddev)"
set xlabel "size of each write() (bytes, log scale)"
set ylabel "speed-up (ratio of throughputs, ×, log scale)"
set xrange [48:350000]
set key outside right top vertical maxrows auto box opaque
set bmargin 5
set arrow 1 from 48,1 to 350000,1 nohead lc rgb "black" lw 1 dt 2
plot dir."/speedup.dat" using 1:2:3 with yerrorlines ls 1 title "fastlocal / tcp", \
	'' using 1:4:5 with yerrorlines ls 4 title "fastlocal / redirect-raw", \
	'' using 1:6:7 with yerrorlines ls 6 title "fastlocal-nodelay / tcp-nodelay", \
	'' using 1:8:9 with yerrorlines ls 2 title "redirect-raw / tcp", \
	'' using 1:10:11 with yerrorlines ls 3 title "fastlocal / unix", \
	'' using 1:12 with linespoints lc rgb "black" dt 3 pt 6 ps 1.2 title "kernel series: patched / vanilla"
