terasim-pir 1
model tiny
layers 2
sequence 16
devices 2
batch 2
shape strategy=- dp=2 pp=1 tp=1 v=1
group dp.s0.r0 0,1
# device 0
op F.s0.m0.t0-16 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-16
op B.s0.m0.t0-16 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-16
op DP.s0.d0 ALLREDUCE dev=0 stream=dp stage=0 layers=0-2 group=dp.s0.r0 tensor=wgrad.s0.r0 bytes=4096 after=B.s0.m0.t0-16
op DP2.s0.d0 ALLREDUCE dev=0 stream=dp stage=0 layers=0-2 group=dp.s0.r0 tensor=wgrad.s0.r0 bytes=4096 after=DP.s0.d0
op OPT.s0.d0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2 after=DP.s0.d0
# device 1
op F.s0.m1.t0-16 FWD dev=1 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-16
op B.s0.m1.t0-16 BWD dev=1 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-16
op DP.s0.d1 ALLREDUCE dev=1 stream=dp stage=0 layers=0-2 group=dp.s0.r0 tensor=wgrad.s0.r0 bytes=4096 after=B.s0.m1.t0-16
op DP2.s0.d1 ALLREDUCE dev=1 stream=dp stage=0 layers=0-2 group=dp.s0.r0 tensor=wgrad.s0.r0 bytes=4096 after=DP.s0.d1
op OPT.s0.d1 OPTIMIZER dev=1 stream=compute stage=0 layers=0-2 after=DP.s0.d1
