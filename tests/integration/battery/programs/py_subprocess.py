"""py_subprocess.py: subprocess pipelines: seq | sort -r | head, run(["true"]) and
run(["false"]) with their output to a log file, and a shell pipeline."""
import subprocess


def main():
    seq = subprocess.Popen(["seq", "1000"], stdout=subprocess.PIPE)
    srt = subprocess.Popen(["sort", "-n", "-r"], stdin=seq.stdout, stdout=subprocess.PIPE)
    seq.stdout.close()
    head = subprocess.Popen(["head", "-5"], stdin=srt.stdout, stdout=subprocess.PIPE, text=True)
    srt.stdout.close()
    out, _ = head.communicate()
    print("pipeline:", out.split(), seq.wait(), srt.wait() in (0, -13), head.returncode)
    with open("log.txt", "w") as log:
        print("true:", subprocess.run(["true"], stdout=log).returncode)
        print("false:", subprocess.run(["false"], stdout=log).returncode)
        print("env true:", subprocess.run(["env", "true"], stdout=log).returncode)
    p = subprocess.run("ls -l / | wc -l > count.txt; cat count.txt | tr -d ' '", shell=True,
                       capture_output=True, text=True)
    print("shell:", int(p.stdout) > 5, p.returncode, repr(p.stderr))
    c = subprocess.run(["sha256sum", "log.txt", "count.txt"], capture_output=True, text=True)
    print(c.stdout, end="")


if __name__ == "__main__":
    main()
