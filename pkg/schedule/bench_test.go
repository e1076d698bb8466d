package schedule_test

import (
	"testing"
	"time"

	"github.com/tockhq/tock/pkg/schedule"
)

func BenchmarkNext(b *testing.B) {
	for _, tt := range []struct {
		name string
		spec schedule.Spec
	}{
		{"CronEverySecondUTC", schedule.Spec{Cron: "* * * * * *"}},
		{"CronEverySecondBerlin", schedule.Spec{Cron: "* * * * * *", Timezone: "Europe/Berlin"}},
		{"CronDailyBerlin", schedule.Spec{Cron: "30 2 * * *", Timezone: "Europe/Berlin"}},
		{"CronFirstMondayBerlin", schedule.Spec{Cron: "0 9 * * 1#1", Timezone: "Europe/Berlin"}},
		{"RRuleSecondlyBerlin", schedule.Spec{RRule: "FREQ=SECONDLY", Timezone: "Europe/Berlin"}},
		{"RRuleFirstMondayBerlin", schedule.Spec{RRule: "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0", Timezone: "Europe/Berlin"}},
		{"RRuleWeekdaysEveryMinute", schedule.Spec{RRule: "FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9,10,11,12,13,14,15,16;BYMINUTE=0,5,10,15,20,25,30,35,40,45,50,55"}},
		{"EveryDayBerlin", schedule.Spec{Every: "day", At: "02:30", Timezone: "Europe/Berlin"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
			tt.spec.StartAt = &start
			s, err := tt.spec.Compile(start)
			if err != nil {
				b.Fatal(err)
			}
			// Years after start_at, walking forward across DST changes.
			from := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
			at := from
			for b.Loop() {
				next, ok := s.Next(at)
				if !ok {
					b.Fatal("no next")
				}
				at = next
				if at.Year() > 2100 {
					at = from
				}
			}
		})
	}
}
