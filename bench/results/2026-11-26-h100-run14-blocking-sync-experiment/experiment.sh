set -u
bash bench/gpu_run.sh data >/dev/null 2>&1
source /tmp/bundle/tools/device-env /tmp/bundle/lib
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64
B=/tmp/bundle/bin; D=/tmp/data/imagenet-like-5000/train; o=$OUT/exp; mkdir -p $o
TIMEFORMAT='  cpu user %U sys %S wall %R'
for round in 1 2 3; do
  timeout 120 $B/train_step_bench --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 5 --json $o/step_$round.json 2>&1 | tail -1
  for bs in 0 1; do
    if [ $bs = 1 ]; then export CONVEYOR_EXPERIMENT_BLOCKING_SYNC=1; else unset CONVEYOR_EXPERIMENT_BLOCKING_SYNC; fi
    for fixed in 0 1; do
      { time timeout 120 $B/feed_vs_prefetch --data $D --modes prefetch --batch 256 --steps 60 --warmup 5 --threads 16 --gpu-share 0.5 --pipeline-deterministic $fixed --json $o/fvp_b${bs}_f${fixed}_$round.json 2>&1 | grep -E '^ *prefetch |experiment' | grep -v warm-up | sed "s/^/bs $bs fixed $fixed r$round: /" ; } 2>&1
    done
    { time timeout 120 $B/pipeline_throughput --data $D --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 --device gpu --deterministic 0 --json $o/pt_b${bs}_$round.json 2>&1 | grep -E '^threads 16:' | cut -c1-60 | sed "s/^/bs $bs alone r$round: /" ; } 2>&1
  done
done
python3 - $o <<'PY'
import json,glob,sys,os
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    d=json.load(open(f)); n=os.path.basename(f)
    if n.startswith('fvp'):
        r=d['results'][0]; dec=r.get('decoder',{}); g=max(dec.get('gpu_decoded',0),1)
        print(n, round(r['images_per_s']), 'share_end %.2f'%dec.get('gpu_share_end',0), 'gpu img', g, 'host %.0f submit %.0f gpu %.0f us/img'%(1e6*dec['host_s']/g,1e6*dec['submit_s']/g,1e6*dec['gpu_s']/g))
    elif n.startswith('pt'):
        dv=d.get('device',{}); g=max(dv.get('gpu_decoded',0),1)
        print(n, round(d['images_per_s']), 'share_end %.2f'%dv.get('gpu_share_at_end',0), 'gpu img', g, 'host %.0f submit %.0f gpu %.0f us/img'%(1e6*dv['decode_host_s']/g,1e6*dv['decode_submit_s']/g,1e6*dv['decode_gpu_s']/g))
    else:
        print(n, d.get('images_per_s'))
PY
cd $o && tar czf $OUT/exp.tgz *.json && rm -f *.json
